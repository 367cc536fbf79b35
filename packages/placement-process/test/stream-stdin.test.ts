// A stream without a terminal starts its command a turn after it is answered: a caller that ends stdin at
// once without writing (the runner) gets a command started with no stdin descriptor; anything written, a stdin
// ended or destroyed later, and a kill before the start behave as on a command started at once.
import { setTimeout as sleep } from 'node:timers/promises';
import { type ExecStream, utf8 } from '@everdict/placement';
import { describe, expect, it, vi } from 'vitest';
import type { SpawnRequest } from '../src/spawner/client.js';
import { makeDriver, requireBwrap } from './helpers.js';

let seq = 0;
const labels = () => ({ tenant: 'stdin', runId: `s-${++seq}`, kind: 'command' as const });

async function collect(s: ExecStream): Promise<{ out: string; exit: unknown }> {
  let out = '';
  s.stdout.on('data', (c: Buffer) => {
    out += utf8(c);
  });
  s.stderr.resume();
  const exit = await s.exit;
  return { out, exit };
}

describe.each(['auto', 'node'] as const)('stream stdin (%s)', (program) => {
  it('asks for a stdin descriptor only when the caller did not end stdin empty at once', async () => {
    requireBwrap();
    const driver = makeDriver({ spawnerProgram: program });
    const asked: boolean[] = [];
    const start = driver.spawner!.start.bind(driver.spawner!);
    vi.spyOn(driver.spawner!, 'start').mockImplementation((request: SpawnRequest, events) => {
      asked.push(request.stdin);
      start(request, events);
    });
    const h = await driver.provision({ labels: labels() });
    const cmd = ['sh', '-c', 'cat; echo end'];

    const ended = await driver.stream(h, cmd);
    ended.stdin.end();
    expect(await collect(ended)).toEqual({ out: 'end\n', exit: { exitCode: 0, signal: null } });

    const written = await driver.stream(h, cmd);
    written.stdin.write('x');
    written.stdin.end();
    expect((await collect(written)).out).toBe('xend\n');

    const late = await driver.stream(h, cmd);
    const lateOut = collect(late);
    await sleep(20);
    late.stdin.end('late');
    expect((await lateOut).out).toBe('lateend\n');

    const destroyed = await driver.stream(h, cmd);
    const destroyedOut = collect(destroyed);
    await sleep(20);
    destroyed.stdin.destroy();
    expect((await destroyedOut).out).toBe('end\n');

    expect(asked).toEqual([false, true, true, true]);
    await driver.dispose(h);
  });

  it('a kill before the command started stops it as it starts', async () => {
    requireBwrap();
    const driver = makeDriver({ spawnerProgram: program });
    const h = await driver.provision({ labels: labels() });
    // No wall-clock bound (a loaded machine takes seconds to start a sandbox): the command sleeps far past
    // the test's timeout, so only the kill can end it in time, and its SIGKILL says it was the kill.
    const s = await driver.stream(h, ['sleep', '3600']);
    s.kill();
    s.stdin.end();
    expect((await collect(s)).exit).toEqual({ exitCode: null, signal: 'SIGKILL' });
    await driver.dispose(h);
  });
});
