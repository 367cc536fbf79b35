// A replica that dies mid-command leaves its command's mark behind. The mark counts until the command's
// timeout (a command may still run until then, wherever it runs) and not after: another replica's commands
// then leave the idle deadline exact, and its reaper closes the session idle on time. Two real cores
// (real bubblewrap sandboxes) on one PGlite database; the dead replica's exec is its `execStarted` with no end.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, testDatabase } from '../../test/db.js';
import { type Json, SESSION_ADMIN_KEY, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call } from '../http/testing/harness.js';
import { execStarted } from './rows.js';

const IDLE_SEC = 300;
const CRASHED_TIMEOUT_MS = 60_000;

let database: TestDatabase;
let crashed: SessionTestApp; // replica A: starts a command, then "dies" (never ends it, never sweeps)
let survivor: SessionTestApp; // replica B: same database, same placement directory
beforeAll(async () => {
  database = await testDatabase();
  const shared = { ...database, close: async () => undefined }; // each core closes it; the file does, once
  crashed = await sessionTestApp({ database: shared, sweep: false });
  survivor = await sessionTestApp({ database: shared, sweep: false, stateDir: crashed.stateDir });
}, 240_000);
afterAll(async () => {
  await survivor?.close();
  await crashed?.close();
  await database?.dispose();
});

const api = async (t: SessionTestApp, method: string, p: string, body?: unknown) => {
  const r = await call(t.app, method, p, { key: SESSION_ADMIN_KEY, ...(body === undefined ? {} : { body }) });
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
  return r.body as Json;
};
const db = () => survivor.core.internals.deps.db;
const session = (id: string) =>
  db()
    .selectFrom('sessions')
    .select(['last_activity_at', 'idle_deadline'])
    .where('run_id', '=', id)
    .executeTakeFirstOrThrow();
const sweep = (t: SessionTestApp) =>
  (t.core.sessions as { reaper: { sweep(): Promise<string[]> } }).reaper.sweep();

/** A session opened on A, with a command A started (marked) and never ended: A died mid-command. */
async function crashedMidCommand(): Promise<{ id: string; startedAt: number }> {
  const clock = (t: SessionTestApp) => t.core.internals.deps.clock().getTime();
  crashed.advance(Math.max(0, clock(survivor) - clock(crashed))); // the two replicas' clocks agree
  const opened = await api(crashed, 'POST', '/sandboxes', { ttlSec: 86_400, idleTimeoutSec: IDLE_SEC });
  const id = (opened.run as { id: string }).id;
  const at = crashed.core.internals.deps.clock();
  await execStarted(db(), 'default', id, randomUUID(), at, CRASHED_TIMEOUT_MS);
  return { id, startedAt: at.getTime() };
}

describe("a crashed replica's in-flight exec", () => {
  it('stops counting at its timeout: the next exec elsewhere leaves the deadline exact, and idle reaps on time', async () => {
    const { id } = await crashedMidCommand();
    survivor.advance(CRASHED_TIMEOUT_MS + 10_000); // past the dead command's timeout: nothing of it can run
    const out = await api(survivor, 'POST', `/sandboxes/${id}/exec`, {
      command: ['true'],
      timeoutMs: 600_000,
    });
    expect(out.exitCode).toBe(0);
    const s = await session(id);
    // The last traffic (this exec's end) + idle timeout — not this exec's own 10-minute cover, kept as if
    // another command still ran.
    expect(s.idle_deadline.getTime()).toBe(s.last_activity_at.getTime() + IDLE_SEC * 1000);

    survivor.advance(IDLE_SEC * 1000 + 5_000);
    expect(await sweep(survivor)).toContain(id);
    const run = await api(survivor, 'GET', `/runs/${id}`);
    expect(run.outputs.result.endReason).toBe('idle');
  }, 120_000);

  it('counts while its timeout has not passed: an exec ending meanwhile keeps its cover', async () => {
    const { id, startedAt } = await crashedMidCommand();
    survivor.advance(1_000); // still well inside the dead command's timeout
    await api(survivor, 'POST', `/sandboxes/${id}/exec`, { command: ['true'] });
    expect((await session(id)).idle_deadline.getTime()).toBe(
      startedAt + CRASHED_TIMEOUT_MS + IDLE_SEC * 1000,
    );
  }, 120_000);
});
