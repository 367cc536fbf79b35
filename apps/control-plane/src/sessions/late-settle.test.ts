// A session the reaper reaches late: its record's energy stops where its money does — at the deadline,
// not at the sweep. On real bubblewrap sandboxes, the sweep driven by hand and the session tests' movable
// clock (as ends.test.ts).
import { decodeAttestationBody } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call } from '../http/testing/harness.js';
import { OPEN_SESSION_WATTS, parkEnergyUj } from './meter.js';

let t: SessionTestApp;
let key: string;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  // $3600/h = $1 per second held: the money names the held span in seconds.
  key = await t.tenant('latesettle', { sessionUsdPerHour: 3600, budget: { usd: 10_000 } });
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const api = async (method: string, p: string, body?: unknown) => {
  const r = await call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });
  return { status: r.status, body: r.body as Json };
};
const sweep = () => (t.core.sessions as { reaper: { sweep(): Promise<string[]> } }).reaper.sweep();
const db = () => t.core.internals.deps.db;

async function open(ttlSec: number, idleTimeoutSec: number): Promise<Json> {
  const r = await api('POST', '/sandboxes', { ttlSec, idleTimeoutSec });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const id = (r.body.run as { id: string }).id;
  return (await api('GET', `/sandboxes/${id}`)).body as Json;
}

/** The run's executed intervals, as its record's attestations hold them. */
async function intervals(runId: string) {
  const rows = await db().selectFrom('attestations').select('body').where('run_id', '=', runId).execute();
  return rows.map((r) => decodeAttestationBody(r.body));
}

/** The run's record segments (wire form), in order. */
async function segments(runId: string): Promise<Json[]> {
  const rows = await db()
    .selectFrom('record_segments')
    .select('payload')
    .where('run_id', '=', runId)
    .orderBy('idx')
    .execute();
  return rows.map((r) => r.payload as unknown as Json);
}

describe('a session the sweep reaches late', () => {
  it("open: its record's interval ends at its idle deadline, where its money stops, not at the sweep", async () => {
    const s = await open(3600, 5);
    const id = s.id as string;
    const deadline = Date.parse(s.idleDeadline as string);
    t.advance(60_000); // the sweep comes 55 s after the idle deadline
    expect(await sweep()).toContain(id);
    const run = (await api('GET', `/runs/${id}`)).body as Json;
    expect(run.outputs.result.endReason).toBe('idle');
    const heldMs = deadline - Date.parse(s.openedAt as string);
    expect(run.usage.costUsd).toBeCloseTo(heldMs / 1000, 3); // money: up to the deadline

    const [interval, ...more] = await intervals(id);
    expect(more).toEqual([]);
    expect(Number(interval?.endedMs)).toBe(deadline); // the record: the same end as the money
    expect(Number(interval?.endedMs)).toBeGreaterThanOrEqual(Number(interval?.startedMs));
    const activeMs = Number(interval?.endedMs) - Number(interval?.startedMs);
    expect(interval?.activeUj).toBe(BigInt(Math.max(1, Math.round(activeMs * OPEN_SESSION_WATTS * 1000))));
  }, 60_000);

  it("parked: its record's idle energy counts up to its expiry, not up to the sweep", async () => {
    const s = await open(30, 600);
    const id = s.id as string;
    expect((await api('POST', `/sandboxes/${id}/suspend`)).status).toBe(200);
    const row = await db()
      .selectFrom('sessions')
      .select(['parked_at', 'expires_at', 'park'])
      .where('run_id', '=', id)
      .executeTakeFirstOrThrow();
    const parkedAt = (row.parked_at as Date).getTime();
    const bytes = (row.park as { bytes: number }).bytes;
    t.advance(3_600_000); // the sweep comes an hour after the expiry
    expect(await sweep()).toContain(id);
    const resumed = (await segments(id)).filter((o) => o.kind === 'resumed');
    const idle = parkEnergyUj(row.expires_at.getTime() - parkedAt, bytes);
    expect(resumed.map((o) => o.idle_uj)).toEqual([idle.toString()]);
  }, 60_000);
});
