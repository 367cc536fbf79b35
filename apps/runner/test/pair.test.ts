// `everdict-runner pair` (the built CLI) against the built control plane: what the runner registers. A runner
// that serves sessions (the default: `start` opens the session channel unless EVERDICT_RUNNER_SESSIONS=0)
// registers the kind `sandbox` beside `command` and `eval` — the control plane places a session only on a
// runner that registered it; one that opens no channel does not.
// A pairing is a new identity: `pair` in a directory that holds a key already (a revoked runner's, or a second
// pairing) pairs a new key — the control plane refuses one any runner holds — and replaces `signing.key` and
// `runner.json` only once it is accepted: a refused pairing leaves the directory byte for byte as it was.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { generateSigningKey, hexToBytes } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpRunnerApi } from '../src/http-api.js';
import { apiCall, mintPairingToken, pair, runPair, scratch } from './helpers.js';

const pairingOf = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'state', 'runner.json'), 'utf8')) as {
    runnerId: string;
    credential: string;
    publicKey: string;
  };
const runnerIdOf = (dir: string) => pairingOf(dir).runnerId;
/** The public key of the secret key in `dir`'s signing.key. */
const keyOf = (dir: string) =>
  generateSigningKey(hexToBytes(readFileSync(join(dir, 'state', 'signing.key'), 'utf8').trim())).publicKey;
const bytesOf = (dir: string, file: string) => readFileSync(join(dir, 'state', file));
const modeOf = (dir: string, file: string) => statSync(join(dir, 'state', file)).mode & 0o777;

let cp: ControlPlaneProcess;
beforeAll(async () => {
  cp = await startControlPlane({ env: { EVERDICT_SESSIONS: 'runner' } });
}, 600_000);
afterAll(async () => {
  await cp?.stop();
});

async function kindsOf(runnerId: string): Promise<string[]> {
  const listed = await apiCall(cp, 'GET', '/runners');
  expect(listed.status, JSON.stringify(listed.body)).toBe(200);
  const runner = (listed.body.items as { id: string; capabilities: { kinds: string[] } }[]).find(
    (r) => r.id === runnerId,
  );
  if (!runner) throw new Error(`runner ${runnerId} not listed`);
  return runner.capabilities.kinds;
}

describe('everdict-runner pair', () => {
  it('registers sandbox beside command and eval by default (it serves sessions)', async () => {
    const dir = await pair(cp.url, cp.apiKey, 'sessions');
    expect(await kindsOf(runnerIdOf(dir))).toEqual(['command', 'eval', 'sandbox']);
  });

  it('registers command and eval only under EVERDICT_RUNNER_SESSIONS=0 (no session channel)', async () => {
    const before = process.env.EVERDICT_RUNNER_SESSIONS;
    process.env.EVERDICT_RUNNER_SESSIONS = '0'; // the CLI child inherits it
    try {
      const dir = await pair(cp.url, cp.apiKey, 'no-sessions');
      expect(await kindsOf(runnerIdOf(dir))).toEqual(['command', 'eval']);
    } finally {
      if (before === undefined) delete process.env.EVERDICT_RUNNER_SESSIONS;
      else process.env.EVERDICT_RUNNER_SESSIONS = before;
    }
  });
});

describe('everdict-runner pair in a directory that holds a pairing', () => {
  it('pairs again after a revoke: a new runner with a new key (the old key is refused as in use)', async () => {
    const dir = await pair(cp.url, cp.apiKey, 'repair');
    const first = pairingOf(dir);
    expect(keyOf(dir)).toBe(first.publicKey);
    const revoked = await apiCall(cp, 'POST', `/runners/${first.runnerId}/revoke`);
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);

    const again = await runPair(cp.url, await mintPairingToken(cp.url, cp.apiKey), dir, 'repair');
    expect(again.status, again.stderr).toBe(0);
    const second = pairingOf(dir);
    expect(second.runnerId).not.toBe(first.runnerId);
    expect(second.publicKey).not.toBe(first.publicKey);
    expect(keyOf(dir)).toBe(second.publicKey);
    expect(modeOf(dir, 'signing.key')).toBe(0o600);
    expect(modeOf(dir, 'runner.json')).toBe(0o600);
    expect(readdirSync(join(dir, 'state')).sort()).toEqual(['runner.json', 'signing.key']);
    // The new runner is the one listed with the new key; its credential works.
    const keys = await apiCall(cp, 'GET', '/keys');
    const listed = (keys.body.keys as { key: string; name: string }[]).filter((k) => k.name === 'repair');
    expect(listed.map((k) => k.key)).toContain(second.publicKey);
    await new HttpRunnerApi(cp.url, second.credential).heartbeat([]);
  }, 600_000);

  it('a second pairing of an active runner is a new runner with a new key', async () => {
    const dir = await pair(cp.url, cp.apiKey, 'second');
    const first = pairingOf(dir);
    const again = await runPair(cp.url, await mintPairingToken(cp.url, cp.apiKey), dir, 'second');
    expect(again.status, again.stderr).toBe(0);
    const second = pairingOf(dir);
    expect(second.runnerId).not.toBe(first.runnerId);
    expect(second.publicKey).not.toBe(first.publicKey);
    expect(keyOf(dir)).toBe(second.publicKey);
  }, 600_000);

  it('a refused pairing leaves the directory byte for byte as it was, the old pairing still usable', async () => {
    const dir = await pair(cp.url, cp.apiKey, 'refused');
    const key = bytesOf(dir, 'signing.key');
    const pairing = bytesOf(dir, 'runner.json');
    const refused = await runPair(cp.url, 'evp_not_a_token', dir, 'refused');
    expect(refused.status, refused.stderr).toBe(1);
    expect(bytesOf(dir, 'signing.key').equals(key)).toBe(true);
    expect(bytesOf(dir, 'runner.json').equals(pairing)).toBe(true);
    expect(readdirSync(join(dir, 'state')).sort()).toEqual(['runner.json', 'signing.key']);
    await new HttpRunnerApi(cp.url, pairingOf(dir).credential).heartbeat([]);
  }, 600_000);

  it('a refused pairing in a new directory writes no key', async () => {
    const dir = scratch('runner-refused-new-');
    const refused = await runPair(cp.url, 'evp_not_a_token', dir, 'refused-new');
    expect(refused.status, refused.stderr).toBe(1);
    expect(existsSync(join(dir, 'state', 'signing.key'))).toBe(false);
    expect(existsSync(join(dir, 'state', 'runner.json'))).toBe(false);
  }, 600_000);
});
