// A dispose while something still changes the workspace: the commands are killed first, but a process that
// survives them (here one on the host, standing in for a survivor or a race with the kill) can swap a
// directory for a symlink to a host directory while the driver — root — removes the tree. The removal must
// never follow it, or it deletes the host directory's files. The swapper exchanges a directory and a
// symlink atomically (renameat2 RENAME_EXCHANGE, in a perl loop), with files of the same names on both sides.
// The swapper is SIGKILLed however the test ends — on a timeout too: one left running kept swapping (for
// good: an orphaned busy loop) while the file's cleanup removed the state directory path by path, which
// failed with ENOTDIR (rmSync meeting a directory turned symlink) and could follow the symlink.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { layout, readRecord } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

const FILES = 100;
const PAIRS = 16;
const labels = (runId: string) => ({ tenant: 'review2', runId, kind: 'sandbox' });

describe('dispose while the workspace is being changed', () => {
  it('removes the workspace without following a symlink swapped in for a directory', async () => {
    requireBwrap();
    const driver = makeDriver({ readyPool: 0 });
    const host = join(tempDir('everdict-host-'), 'precious');
    mkdirSync(host);
    const names = Array.from({ length: FILES }, (_, i) => `f${String(i).padStart(4, '0')}`);
    for (const name of names) writeFileSync(join(host, name), 'host file\n');
    // PAIRS directories, each with the host directory's file names, and a symlink to the host directory beside each
    const setup = `for i in $(seq 1 ${PAIRS}); do mkdir d$i && (cd d$i && seq -f 'f%04g' 0 ${FILES - 1} | xargs touch) && ln -s ${host} d$i.link; done`;
    for (let round = 0; round < 8; round++) {
      const box = await driver.provision({ labels: labels(`racer-${round}`) });
      expect((await driver.exec(box, ['sh', '-c', setup])).exitCode).toBe(0);
      const record = await readRecord(layout(driver.config.stateDir), box.id);
      // x86_64 renameat2 (316), AT_FDCWD (-100), RENAME_EXCHANGE (2): each `d<i>` is the directory or the symlink
      const flipper = spawn(
        'perl',
        [
          '-e',
          `$|=1; print "go\\n"; while (1) { for my $i (1..${PAIRS}) { syscall(316, -100, "d$i", -100, "d$i.link", 2) } }`,
        ],
        { cwd: record!.workspace, stdio: ['ignore', 'pipe', 'ignore'] },
      );
      onTestFinished(() => {
        if (flipper.exitCode === null && flipper.signalCode === null) flipper.kill('SIGKILL');
      });
      const exited = new Promise((resolve) => flipper.once('exit', resolve));
      await new Promise<void>((resolve) => flipper.stdout.once('data', () => resolve()));
      await driver.dispose(box);
      flipper.kill('SIGKILL');
      await exited;
      expect(readdirSync(host).length).toBe(FILES);
      expect(existsSync(record!.workspace)).toBe(false); // removed whole, the race notwithstanding
    }
    expect(existsSync(host)).toBe(true);
    expect(readdirSync(host).sort()).toEqual(names);
  }, 600_000); // a net against a hang only: 8 rounds took over 180 s at a load of 30–40
});
