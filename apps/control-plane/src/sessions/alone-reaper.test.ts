// The sessions' reaper of a control plane alone on its database (PGlite: no other process can open it) ticks
// every 100 ms here but sweeps only when a fact was heard, when a write of this process moved a deadline
// earlier, or when the earliest deadline its last sweep read comes — its fallback sweep is a minute away. So a
// session idle past its timeout is still reaped within a second or two of its deadline, the ticks between
// skipped; and a command's end, which brings the idle deadline its start had pushed out back to now + the idle
// timeout without a fact, is heard too. On the real core with real bubblewrap sandboxes.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ALONE_POLL_MS, beforeFallback as soon } from '../../test/alone.js';
import { type Json, SESSION_ADMIN_KEY, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call as rawCall } from '../http/testing/harness.js';

let t: SessionTestApp;
beforeAll(async () => {
  t = await sessionTestApp({ sweepMs: 100, alonePollMs: ALONE_POLL_MS });
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const call = (method: string, path: string, body?: unknown) =>
  rawCall(t.app, method, path, { key: SESSION_ADMIN_KEY, ...(body === undefined ? {} : { body }) });
const run = async (id: string) => (await call('GET', `/runs/${id}`)).body as Json;
const reaper = () => {
  const r = t.core.sessions?.reaper;
  if (!r) throw new Error('no reaper');
  return r;
};

async function open(body: { ttlSec: number; idleTimeoutSec: number }): Promise<string> {
  const r = await call('POST', '/sandboxes', body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}

it('a session idle past its timeout is reaped at its deadline, the ticks before it skipped', async () => {
  const id = await open({ ttlSec: 600, idleTimeoutSec: 2 });
  const openedAt = Date.now();
  const skipped = reaper().skippedSweeps;
  await soon(() => expect(reaper().skippedSweeps).toBeGreaterThan(skipped + 3));
  expect((await run(id)).status).toBe('running');
  await soon(async () => expect((await run(id)).outputs?.result).toEqual({ endReason: 'idle' }));
  expect(Date.now() - openedAt).toBeGreaterThanOrEqual(1_900);
}, 60_000);

it('a command ending brings the idle deadline back in: the session is reaped a timeout after it', async () => {
  const id = await open({ ttlSec: 600, idleTimeoutSec: 1 });
  // While it runs, the deadline is its 60 s timeout + 1 s; its end makes it end + 1 s, with no fact.
  const exec = await call('POST', `/sandboxes/${id}/exec`, { command: ['sleep', '2'], timeoutMs: 60_000 });
  expect(exec.body).toMatchObject({ exitCode: 0 });
  const endedAt = Date.now();
  const skipped = reaper().skippedSweeps;
  await soon(async () => expect((await run(id)).outputs?.result).toEqual({ endReason: 'idle' }));
  expect(Date.now() - endedAt).toBeLessThan(20_000); // its deadline (≈ 1 s), not the fallback's 60 s
  expect(reaper().skippedSweeps).toBeGreaterThan(skipped); // quiet between its end and its deadline
}, 60_000);
