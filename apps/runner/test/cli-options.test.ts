// `everdict-runner start` (the built CLI) refuses what it cannot use before it starts. Numbers: a watts figure
// that is not a number made every interval fail at its end (its energy not a u64: each run re-run until
// `executor_lost`), and a grace that is not one killed every interval at the first SIGTERM. Its key: a
// `signing.key` missing (start used to make one) or not the key `runner.json` was paired with had every
// completion refused by the control plane — now `bad_state`, before any request is sent.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newKey, savePairedIdentity } from '../src/state.js';
import { CLI, scratch } from './helpers.js';

const dir = scratch('runner-cli-options-');
const state = join(dir, 'state');

/** A control plane that answers nothing (each request held open) and records who asked what. */
let server: Server;
let url: string;
const requests: string[] = [];
let requested: () => void = () => {};
beforeAll(async () => {
  server = createServer((req) => {
    requests.push(`${req.headers.authorization} ${req.method} ${req.url}`);
    requested();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Starts the runner; answers how it ended: its exit, or `started` once `until` holds (default: it logged
 * `runner started`) — then it is killed, and answered once it is gone.
 */
async function start(
  args: string[],
  env: Record<string, string>,
  until?: Promise<void>,
): Promise<{ how: string; log: string }> {
  const child = spawn(process.execPath, [CLI, 'start', '--state-dir', state, ...args], {
    env: { ...process.env, EVERDICT_RUNNER_SESSIONS: '0', EVERDICT_PLACEMENT_DIR: join(dir, 'p'), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  let killed = false;
  return new Promise((resolve) => {
    const started = () => {
      killed = true;
      child.kill('SIGKILL');
    };
    void until?.then(started);
    child.stderr?.on('data', (c: Buffer) => {
      log += c.toString();
      if (!until && log.includes('runner started')) started();
    });
    child.once('exit', (code) => resolve({ how: killed ? 'started' : `exit ${code}`, log }));
  });
}

/** A pairing to the recording server with `credential`, and its own key (as `pair` writes them). */
async function paired(credential = 'c') {
  const key = newKey();
  await savePairedIdentity(state, key, {
    url,
    runnerId: 'r1',
    credential,
    publicKey: key.publicKey,
    name: 'n',
  });
}

describe('everdict-runner start', () => {
  it('refuses a watts figure or a grace that is not a number: usage (64), before it starts', async () => {
    await paired();
    const watts = await start([], { EVERDICT_WATTS_PER_CORE: 'ten' });
    expect(watts.how, watts.log).toBe('exit 64');
    expect(watts.log).toContain('"code":"usage"');
    expect(watts.log).toContain('EVERDICT_WATTS_PER_CORE');
    const grace = await start(['--grace-ms', 'soon'], {});
    expect(grace.how, grace.log).toBe('exit 64');
    expect(grace.log).toContain('--grace-ms');
  }, 120_000);

  it('refuses a signing.key that is not its pairing’s, or none: bad_state (1), no request sent, no key made', async () => {
    await paired('c-ok');
    // Its own key: it starts and asks the control plane (what shows the refusals below would be seen asking).
    const first = new Promise<void>((r) => {
      requested = r;
    });
    const ok = await start([], {}, first);
    expect(ok.how, ok.log).toBe('started');
    expect(requests.some((r) => r.startsWith('Bearer c-ok '))).toBe(true);

    // Another key than the pairing names (a stale key file after a pairing copied from elsewhere).
    await paired('c-refused');
    const other = newKey();
    await writeFile(join(state, 'signing.key'), `${Buffer.from(other.secretKey).toString('hex')}\n`);
    const mismatched = await start([], {});
    expect(mismatched.how, mismatched.log).toBe('exit 1');
    expect(mismatched.log).toContain('"code":"bad_state"');
    expect(mismatched.log).toContain('signing.key');
    expect(mismatched.log).toContain('everdict-runner pair');
    expect(mismatched.log).not.toContain('runner started');

    // No key file at all: start used to make one the control plane never paired.
    await rm(join(state, 'signing.key'));
    const missing = await start([], {});
    expect(missing.how, missing.log).toBe('exit 1');
    expect(missing.log).toContain('"code":"bad_state"');
    expect(missing.log).toContain('no signing key');
    expect((await readdir(state)).filter((f) => f.startsWith('signing.key'))).toEqual([]);
    expect(requests.filter((r) => r.startsWith('Bearer c-refused '))).toEqual([]);
  }, 120_000);
});
