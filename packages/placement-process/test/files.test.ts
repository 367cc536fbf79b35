// `files` on the process driver (src/workspace-files.ts), beyond the contract: an idle sandbox whose directory
// holds directories only answers none without starting bubblewrap (a command run that wrote no file costs no
// archiver); one with files streams them from a sandboxed tar, which a consumer that stops early kills; and a
// sandbox still running something is read through the sandboxed tar too.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { countingBwrap, makeDriver, requireBwrap } from './helpers.js';

/** A driver whose bubblewrap notes each start, and how many of those started the archiver of `files`. */
function countingDriver() {
  const counting = countingBwrap('everdict-pd-files-');
  const archivers = () => counting.starts().filter((l) => l.includes('--hard-dereference')).length;
  return { driver: makeDriver({ bwrap: counting.bwrap }), archivers };
}

/** Processes still running tar for `files` whose command line names `marker`. */
function archiversAlive(marker: string): number {
  const out = execFileSync('ps', ['-eo', 'args='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes('--hard-dereference') && l.includes(marker)).length;
}

async function count(files: AsyncIterable<{ content: NodeJS.ReadableStream }>): Promise<number> {
  let n = 0;
  for await (const f of files) {
    for await (const _ of f.content);
    n += 1;
  }
  return n;
}

describe('process driver files', () => {
  it('answers directories only, or no directory, without starting an archiver', async () => {
    requireBwrap();
    const { driver, archivers } = countingDriver();
    const h = await driver.provision({
      labels: { tenant: 'files', runId: 'dirs-only', kind: 'command' },
      directories: ['out', 'out/a/b'],
    });
    expect((await driver.exec(h, ['sh', '-c', 'mkdir -p out/c'])).exitCode).toBe(0);
    expect(await count(driver.files(h, 'out'))).toBe(0);
    expect(await count(driver.files(h, 'absent'))).toBe(0);
    expect(archivers()).toBe(0);
    // A file: the sandboxed tar reads it.
    expect((await driver.exec(h, ['sh', '-c', 'printf x > out/a/b/x.txt'])).exitCode).toBe(0);
    expect(await count(driver.files(h, 'out'))).toBe(1);
    expect(archivers()).toBe(1);
    await driver.dispose(h);
  });

  it('kills the archiver when its consumer stops early', async () => {
    requireBwrap();
    const { driver } = countingDriver();
    const h = await driver.provision({ labels: { tenant: 'files', runId: 'early', kind: 'command' } });
    // Three files, each more than a pipe holds: the archiver is still writing when the consumer stops.
    const fill = 'mkdir -p out-early && for i in 1 2 3; do head -c 4194304 /dev/zero > out-early/$i; done';
    expect((await driver.exec(h, ['sh', '-c', fill])).exitCode).toBe(0);
    for await (const _ of driver.files(h, 'out-early')) break;
    let alive = archiversAlive('out-early');
    for (let i = 0; i < 200 && alive > 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      alive = archiversAlive('out-early');
    }
    expect(alive).toBe(0);
    await driver.dispose(h);
  });

  it('reads a sandbox that still runs something through the sandboxed tar', async () => {
    requireBwrap();
    const { driver, archivers } = countingDriver();
    const h = await driver.provision({
      labels: { tenant: 'files', runId: 'busy', kind: 'command' },
      directories: ['out'],
    });
    const s = await driver.stream(h, ['sh', '-c', 'echo started; read -r line; echo "$line"']);
    s.stderr.resume();
    await new Promise((r) => s.stdout.once('data', r)); // it runs
    s.stdout.resume();
    expect(await count(driver.files(h, 'out'))).toBe(0);
    expect(archivers()).toBe(1); // not idle: the host's view of a live workspace is not trusted
    s.stdin.end('done\n');
    await s.exit;
    await driver.dispose(h);
  });
});
