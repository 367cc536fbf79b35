// `everdict-runner pair` (the built CLI) against the built control plane: what the runner registers. A runner
// that serves sessions (the default: `start` opens the session channel unless EVERDICT_RUNNER_SESSIONS=0)
// registers the kind `sandbox` beside `command` and `eval` — the control plane places a session only on a
// runner that registered it; one that opens no channel does not.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiCall, pair } from './helpers.js';

const runnerIdOf = (dir: string) =>
  (JSON.parse(readFileSync(join(dir, 'state', 'runner.json'), 'utf8')) as { runnerId: string }).runnerId;

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
