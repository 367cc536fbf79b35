// `everdict-runner start` (the built CLI) refuses numbers it cannot use before it starts: a watts figure
// that is not a number made every interval fail at its end (its energy not a u64: each run re-run until
// `executor_lost`), and a grace that is not one killed every interval at the first SIGTERM.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { savePairing } from '../src/state.js';
import { CLI, scratch } from './helpers.js';

const dir = scratch('runner-cli-options-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the runner; answers how it ended: its exit, or `started` once it logged so (then it is killed). */
async function start(args: string[], env: Record<string, string>): Promise<{ how: string; log: string }> {
  const child = spawn(process.execPath, [CLI, 'start', '--state-dir', join(dir, 'state'), ...args], {
    env: { ...process.env, EVERDICT_RUNNER_SESSIONS: '0', EVERDICT_PLACEMENT_DIR: join(dir, 'p'), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  return new Promise((resolve) => {
    child.stderr?.on('data', (c: Buffer) => {
      log += c.toString();
      if (log.includes('runner started')) {
        child.kill('SIGKILL');
        resolve({ how: 'started', log });
      }
    });
    child.once('exit', (code) => resolve({ how: `exit ${code}`, log }));
  });
}

describe('everdict-runner start', () => {
  it('refuses a watts figure or a grace that is not a number: usage (64), before it starts', async () => {
    await savePairing(join(dir, 'state'), {
      url: 'http://127.0.0.1:9',
      runnerId: 'r1',
      credential: 'c',
      publicKey: 'a'.repeat(64),
      name: 'n',
    });
    const watts = await start([], { EVERDICT_WATTS_PER_CORE: 'ten' });
    expect(watts.how, watts.log).toBe('exit 64');
    expect(watts.log).toContain('"code":"usage"');
    expect(watts.log).toContain('EVERDICT_WATTS_PER_CORE');
    const grace = await start(['--grace-ms', 'soon'], {});
    expect(grace.how, grace.log).toBe('exit 64');
    expect(grace.log).toContain('--grace-ms');
  }, 120_000);
});
