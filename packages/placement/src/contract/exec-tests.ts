// Contract: exec — output, exit codes, stdin, env, caps, timeouts, the deadline, the workspace.
import { expect, it } from 'vitest';
import { programExitOf } from '../errors.js';
import { ExecResult } from '../exec.js';
import { utf8 } from '../output.js';
import { MAX_WALL_TIMEOUT_MS } from '../spec.js';
import { out, refusal, type SuiteHarness } from './harness.js';

export function execTests(h: () => SuiteHarness): void {
  const cmd = () => h().fixture.commands;

  it('runs a command: stdout and stderr apart, exit code, timing', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    if (!d.describe().capabilities.exec) {
      await refusal(d.exec(handle, cmd().echo('x')), 'unsupported');
      return;
    }
    const r = ExecResult.parse(await d.exec(handle, cmd().echo('hello world')));
    expect(r).toMatchObject({ exitCode: 0, signal: null, truncated: false });
    expect(out(r)).toBe('hello world');
    expect(r.stderr.byteLength).toBe(0);
    expect(r.timing.endedAtMs).toBeGreaterThanOrEqual(r.timing.startedAtMs);
    expect(r.timing.wallMs).toBeGreaterThanOrEqual(0);
    const e = await d.exec(handle, cmd().echoErr('to stderr'));
    expect(utf8(e.stderr)).toBe('to stderr');
    expect(e.stdout.byteLength).toBe(0);
  });

  it('returns a non-zero exit as a result, not an error', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    expect((await d.exec(handle, cmd().exit(3))).exitCode).toBe(3);
    expect((await d.exec(handle, cmd().exit(0))).exitCode).toBe(0);
  });

  it('feeds stdin', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    expect(out(await d.exec(handle, cmd().cat(), { stdin: 'line one\nline two\n' }))).toBe(
      'line one\nline two\n',
    );
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    expect([...(await d.exec(handle, cmd().cat(), { stdin: bytes })).stdout]).toEqual([...bytes]);
  });

  it('passes the sandbox env and the exec env (the exec wins)', async () => {
    const d = await h().driver();
    const handle = await h().provision(d, { env: { FROM_SPEC: 'spec', BOTH: 'spec' } });
    expect(out(await d.exec(handle, cmd().printEnv('FROM_SPEC')))).toBe('spec');
    expect(out(await d.exec(handle, cmd().printEnv('BOTH'), { env: { BOTH: 'exec' } }))).toBe('exec');
    expect(out(await d.exec(handle, cmd().printEnv('BOTH')))).toBe('spec');
  });

  it('caps output: keeps the prefix and says truncated, or stops the command with output_capped', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    const r = await d.exec(handle, cmd().flood(50_000), { outputCapBytes: 1000 });
    expect(r.exitCode).toBe(0);
    expect(r.truncated).toBe(true);
    expect(r.stdout.byteLength).toBe(1000);
    expect(out(r)).toBe('x'.repeat(1000));
    const err = await refusal(
      d.exec(handle, cmd().flood(50_000), { outputCapBytes: 1000, onOutputCap: 'kill' }),
      'output_capped',
    );
    expect(err.detail).toHaveProperty('result');
    expect(out(await d.exec(handle, cmd().flood(10), { outputCapBytes: 10 }))).toBe('x'.repeat(10));
  });

  it('stops a command at its timeout with timeout; the sandbox still works', async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    const err = await refusal(d.exec(handle, cmd().sleep(60_000), { timeoutMs: 400 }), 'timeout');
    expect(err.detail).toMatchObject({ bound: 'exec' });
    expect(out(await d.exec(handle, cmd().echo('after')))).toBe('after');
  });

  it("stops a command at the sandbox's wall deadline", async () => {
    const d = await h().driver();
    const handle = await h().provision(d, { limits: { wallTimeoutMs: 3000 } });
    const err = await refusal(d.exec(handle, cmd().sleep(60_000), { timeoutMs: 120_000 }), 'timeout');
    expect(err.detail).toMatchObject({ bound: 'deadline' });
    await refusal(d.exec(handle, cmd().echo('late')), 'timeout');
  });

  it("keeps wall budgets past setTimeout's 2^31 − 1 ms range: they do not fire at once", async () => {
    const d = await h().driver();
    const handle = await h().provision(d, { limits: { wallTimeoutMs: 2 ** 31 + 60_000 } });
    expect(handle.deadlineMs - handle.createdAtMs).toBe(2 ** 31 + 60_000);
    expect((await d.exec(handle, cmd().sleep(300))).exitCode).toBe(0);
    expect((await d.exec(handle, cmd().sleep(300), { timeoutMs: 2 ** 31 + 1 })).exitCode).toBe(0);
    const longest = await h().provision(d, { limits: { wallTimeoutMs: MAX_WALL_TIMEOUT_MS } });
    expect(out(await d.exec(longest, cmd().echo('still')))).toBe('still');
  });

  it('keeps the workspace across commands, private to the sandbox', async () => {
    const d = await h().driver();
    const a = await h().provision(d);
    const b = await h().provision(d);
    expect((await d.exec(a, cmd().writeFile('notes/a.txt', 'kept'))).exitCode).toBe(0);
    expect(out(await d.exec(a, cmd().readFile('notes/a.txt')))).toBe('kept');
    expect((await d.exec(b, cmd().readFile('notes/a.txt'))).exitCode).not.toBe(0);
  });

  it("makes the spec's directories in the workspace before the handle is returned, the sandbox's to write", async () => {
    const d = await h().driver();
    const isDir = cmd().writableDirectory;
    if (!isDir) {
      await refusal(h().provision(d, { directories: ['out'] }), 'unsupported');
      return;
    }
    const a = await h().provision(d, { directories: ['out', 'deep/er/still', 'out'] });
    for (const path of ['out', 'deep', 'deep/er', 'deep/er/still'])
      expect((await d.exec(a, isDir(path))).exitCode, path).toBe(0);
    expect((await d.exec(a, isDir('absent'))).exitCode).not.toBe(0);
    expect((await d.exec(a, ['sh', '-c', 'printf x > out/f && cat out/f'])).stdout).toEqual(
      new TextEncoder().encode('x'),
    );
    const caps = d.describe().capabilities;
    if (!caps.snapshot) return;
    // Seeded: the snapshot's entries stay, the directories are made after it; a file in the way refuses.
    await d.exec(a, cmd().writeFile('out/keep.txt', 'kept'));
    await d.exec(a, cmd().writeFile('blocked', 'a file'));
    const snap = await d.snapshot(a);
    const seeded = await h().provision(d, { workspace: snap, directories: ['out', 'fresh/one'] });
    expect(out(await d.exec(seeded, cmd().readFile('out/keep.txt')))).toBe('kept');
    expect((await d.exec(seeded, isDir('fresh/one'))).exitCode).toBe(0);
    const free = (await d.capacity()).slotsFree;
    await refusal(h().provision(d, { workspace: snap, directories: ['blocked/sub'] }), 'spawn_failed');
    expect((await d.capacity()).slotsFree).toBe(free);
  });

  it("refuses a program that does not exist with spawn_failed, naming a shell's 127 (the command's end)", async () => {
    const d = await h().driver();
    const handle = await h().provision(d);
    const err = await refusal(d.exec(handle, ['everdict-no-such-program-4711']), 'spawn_failed');
    expect(programExitOf(err)).toBe(127);
    // …while a program that runs and exits 127 itself is a result, not a refusal.
    expect((await d.exec(handle, cmd().exit(127))).exitCode).toBe(127);
    if (!d.describe().capabilities.stream) return;
    const s = await d.stream(handle, ['everdict-no-such-program-4711']);
    s.stdin.end();
    expect(programExitOf(await refusal(s.exit, 'spawn_failed'))).toBe(127);
  });
}
