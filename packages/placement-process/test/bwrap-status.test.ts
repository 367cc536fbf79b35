// Bubblewrap's own failure to start a command (a mount it could not make, a working directory that is not
// there, a program it could not exec) is `spawn_failed`; a command's exit status is its own. The two are told
// apart by bubblewrap's status descriptor (--json-status-fd: an `exit-code` only for a command it exec'd), not
// by stderr text: a command that prints `bwrap: …` first and exits 1 answered spawn_failed before. On every
// way of starting bubblewrap (the native spawner, the Node one, inline) and with and without a hold (cgroups,
// rlimits).
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ExecStream, programExitOf, utf8 } from '@everdict/placement';
import { refusal } from '@everdict/placement/contract';
import { describe, expect, it } from 'vitest';
import type { ProcessDriverConfigInput } from '../src/process-driver-config.js';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

let run = 0;
const labels = () => ({ tenant: 'bwrap-status', runId: `s-${++run}`, kind: 'command' });

async function ended(s: ExecStream): Promise<{ stderr: string; exit: unknown }> {
  s.stdin.end();
  s.stdout.resume();
  let stderr = '';
  s.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const exit = await s.exit;
  return { stderr, exit };
}

/** bubblewrap through a wrapper that adds a bind of a path that does not exist: bubblewrap itself fails. */
function failingBwrap(): string {
  const dir = tempDir('everdict-pd-bwrap-');
  const wrapper = join(dir, 'bwrap');
  writeFileSync(wrapper, '#!/bin/sh\nexec bwrap --ro-bind /everdict-no-such-path-4711 /mnt "$@"\n');
  chmodSync(wrapper, 0o755);
  return wrapper;
}

const ways: [string, ProcessDriverConfigInput][] = [
  ['native spawner', { spawnerProgram: 'auto' }],
  ['node spawner', { spawnerProgram: 'node' }],
  ['inline', { spawner: 'inline' }],
  ['native spawner, rlimit', { spawnerProgram: 'auto', limits: 'rlimit' }],
  ['node spawner, rlimit', { spawnerProgram: 'node', limits: 'rlimit' }],
];

describe.each(ways)('bubblewrap status (%s)', (_way, config) => {
  it('a command that prints "bwrap: …" first on stderr and exits 1 answers exit 1', async () => {
    requireBwrap();
    const driver = makeDriver(config);
    const h = await driver.provision({ labels: labels() });
    const argv = ['sh', '-c', 'echo "bwrap: fake" >&2; exit 1'];
    const r = await driver.exec(h, argv);
    expect(r.exitCode).toBe(1);
    expect(utf8(r.stderr)).toBe('bwrap: fake\n');
    expect(await ended(await driver.stream(h, argv))).toEqual({
      stderr: 'bwrap: fake\n',
      exit: { exitCode: 1, signal: null },
    });
    // and its other statuses are its own too
    expect((await driver.exec(h, ['sh', '-c', 'echo "bwrap: fake" >&2; exit 3'])).exitCode).toBe(3);
    await driver.dispose(h);
  });

  it("bubblewrap's own failure still answers spawn_failed", async () => {
    requireBwrap();
    const driver = makeDriver(config);
    const h = await driver.provision({ labels: labels() });
    // a working directory that is not there: bubblewrap's chdir fails before the command
    const chdir = await refusal(driver.exec(h, ['true'], { cwd: 'no/such/dir' }), 'spawn_failed');
    expect(chdir.message).toMatch(/^bwrap: Can't chdir/);
    expect(programExitOf(chdir)).toBeUndefined(); // the sandbox's failure, not the program's
    const s = await driver.stream(h, ['true'], { cwd: 'no/such/dir' });
    expect(programExitOf(await refusal(ended(s), 'spawn_failed'))).toBeUndefined();
    // a program it could not exec: the command's own end, counted as a shell counts it
    const missing = await refusal(driver.exec(h, ['everdict-no-such-program-4711']), 'spawn_failed');
    expect(missing.message).toBe('bwrap: execvp everdict-no-such-program-4711: No such file or directory');
    expect(programExitOf(missing)).toBe(127);
    await driver.exec(h, ['sh', '-c', 'printf "#!/bin/sh\\n" > plain && chmod 644 plain']);
    const plain = await refusal(driver.exec(h, ['./plain']), 'spawn_failed');
    expect(plain.message).toMatch(/^bwrap: execvp \.\/plain: Permission denied$/);
    expect(programExitOf(plain)).toBe(126);
    expect(programExitOf(await refusal(ended(await driver.stream(h, ['./plain'])), 'spawn_failed'))).toBe(
      126,
    );
    await driver.dispose(h);

    // a bind of a path that does not exist (its mounts come before the hold: under cgroups the namespace init
    // may be gone before it could be moved into them, which fails the start as such, so only the code is sure)
    // A move back out of the cgroups that finds bubblewrap gone (ESRCH) is no warning: nothing stayed in.
    const warnings: unknown[] = [];
    const failing = makeDriver({ ...config, bwrap: failingBwrap(), onWarning: (w) => warnings.push(w) });
    const f = await failing.provision({ labels: labels() });
    expect(programExitOf(await refusal(failing.exec(f, ['true']), 'spawn_failed'))).toBeUndefined();
    await refusal(ended(await failing.stream(f, ['true'])), 'spawn_failed');
    await failing.dispose(f);
    expect(warnings).toEqual([]);
  });
});
