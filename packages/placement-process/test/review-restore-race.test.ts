// A restore while a command still runs in the sandbox: the old workspace is removed (by the driver, as root)
// while the command can still change it — it is bind-mounted into the command's sandbox. The removal must
// never follow a symlink the command swaps in for a directory mid-walk, or it deletes host files. The
// command here swaps a directory and a symlink to a host directory back and forth atomically (renameat2
// RENAME_EXCHANGE, in a perl loop), with files of the same names on both sides.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

const FILES = 400;
const labels = (runId: string) => ({ tenant: 'review', runId, kind: 'sandbox' });

describe('restore while a command runs', () => {
  it('removes the old workspace without following a symlink the command swapped in', async () => {
    requireBwrap();
    const driver = makeDriver();
    const host = join(tempDir('everdict-host-'), 'precious');
    mkdirSync(host);
    const names = Array.from({ length: FILES }, (_, i) => `f${String(i).padStart(4, '0')}`);
    for (const name of names) writeFileSync(join(host, name), 'host file\n');

    const empty = await driver.provision({ labels: labels('empty') });
    const snapshot = await driver.snapshot(empty);
    const box = await driver.provision({ labels: labels('racer') });
    const setup = `mkdir d && cd d && seq -f 'f%04g' 0 ${FILES - 1} | xargs touch && cd .. && ln -s ${host} d.link`;
    expect((await driver.exec(box, ['sh', '-c', setup])).exitCode).toBe(0);
    // x86_64 renameat2 (316), AT_FDCWD (-100), RENAME_EXCHANGE (2): `d` is the directory or the symlink
    const flipper = [
      'perl',
      '-e',
      '$|=1; my ($x, $y) = ("d", "d.link"); print "go\\n"; while (1) { syscall(316, -100, $x, -100, $y, 2) }',
    ];
    for (let round = 0; round < 12; round++) {
      const stream = await driver.stream(box, flipper, {});
      stream.stdin.end();
      await new Promise<void>((resolve) => stream.stdout.once('data', () => resolve()));
      const refused = await driver.restore(box, snapshot).then(
        () => null,
        (e: unknown) => e,
      );
      stream.kill();
      await stream.exit.catch(() => undefined);
      expect(readdirSync(host).length).toBe(FILES);
      expect(refused).toBeNull();
      // the next round races on a fresh tree again
      expect((await driver.exec(box, ['sh', '-c', setup])).exitCode).toBe(0);
    }
    expect(existsSync(host)).toBe(true);
    expect(readdirSync(host).sort()).toEqual(names);
  });
});
