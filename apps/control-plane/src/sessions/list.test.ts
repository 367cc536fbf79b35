// GET /sandboxes on real bubblewrap sandboxes: what it shows of each session is exactly what GET
// /sandboxes/:id shows (open, parked, resumed, a record that does not verify), and what it costs the database
// does not grow with the sessions listed — their records are read in one batch, not one session at a time.
import type { KyselyPlugin } from 'kysely';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SessionTestApp, sessionTestApp } from '../../test/sessions.js';
import { call } from '../http/testing/harness.js';
import { readRecord } from '../ledger/records.js';
import { selectRunRows } from '../ledger/runs.js';
import type { Principal } from '../services/types.js';
import { recordedEnergy } from './recorded.js';
import { type SessionCore, SessionService } from './service.js';

let t: SessionTestApp;
let key: string;
let principal: Principal;
let core: SessionCore;
beforeAll(async () => {
  t = await sessionTestApp({ sweep: false });
  key = await t.tenant('lister', { session: { maxSessions: 40, memberReserve: 0 }, sessionUsdPerHour: 3.6 });
  principal = await t.core.services.auth.authenticate(key);
  core = t.core.sessions?.service.core as SessionCore;
}, 240_000);
afterAll(async () => {
  await t?.close();
});

const api = (method: string, p: string, body?: unknown) =>
  call(t.app, method, p, { key, ...(body === undefined ? {} : { body }) });

async function open(): Promise<string> {
  const r = await api('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 600 });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}
async function ok(method: string, p: string, body?: unknown) {
  const r = await api(method, p, body);
  expect(r.status, `${method} ${p}: ${JSON.stringify(r.body)}`).toBe(200);
}

/** The service on a database handle that counts every statement it sends, its clock stopped at `at`. */
function counted(at: Date) {
  let statements = 0;
  const counting: KyselyPlugin = {
    transformQuery: (a) => {
      statements += 1;
      return a.node;
    },
    transformResult: async (a) => a.result,
  };
  const deps = { ...core.deps, db: core.deps.db.withPlugin(counting), clock: () => at };
  const service = new SessionService({ ...core, deps });
  return {
    service,
    async statementsOf(fn: () => Promise<unknown>) {
      const before = statements;
      await fn();
      return statements - before;
    },
  };
}

const later = () => new Date(t.core.internals.deps.clock().getTime() + 1_000);

describe('GET /sandboxes', () => {
  const ids: Record<'open' | 'parked' | 'resumed' | 'closed' | 'broken', string> = {
    open: '',
    parked: '',
    resumed: '',
    closed: '',
    broken: '',
  };

  it('shows each session exactly as GET /sandboxes/:id does: open, parked, resumed and a record that does not verify', async () => {
    for (const k of Object.keys(ids) as (keyof typeof ids)[]) ids[k] = await open();
    for (const id of Object.values(ids))
      await ok('POST', `/sandboxes/${id}/exec`, { command: ['sh', '-c', 'echo x > note.txt'] });
    for (const id of [ids.parked, ids.resumed, ids.broken]) await ok('POST', `/sandboxes/${id}/suspend`);
    for (const id of [ids.resumed, ids.broken]) await ok('POST', `/sandboxes/${id}/resume`, {});
    await ok('POST', `/sandboxes/${ids.closed}/close`);
    // A record whose park's idle energy was raised in storage: it no longer verifies (its record counts 0).
    await sql`UPDATE record_segments SET payload = jsonb_set(payload, '{idle_uj}', '"999999999999"')
      WHERE run_id = ${ids.broken} AND kind = 'resumed'`.execute(t.core.internals.deps.db);

    const { service } = counted(later());
    const listed = await service.list(principal);
    expect(listed.map((v) => v.id).sort()).toEqual(
      [ids.open, ids.parked, ids.resumed, ids.broken].sort(), // a closed session is no longer listed
    );
    expect(Object.fromEntries(listed.map((v) => [v.id, v.state]))).toMatchObject({
      [ids.open]: 'open',
      [ids.parked]: 'parked',
      [ids.resumed]: 'open',
      [ids.broken]: 'open',
    });
    for (const view of listed) expect(view).toEqual(await service.get(principal, view.id));
    // The recorded part is the record's own verified cost (GET /runs/:id/record): more than the open
    // interval alone where an interval and a park were sealed, nothing where the record does not verify.
    const runs = await selectRunRows(core.deps.db)
      .selectAll()
      .where('id', 'in', [ids.open, ids.parked, ids.resumed, ids.broken])
      .execute();
    const energy = await recordedEnergy(core.deps.db, runs);
    for (const run of runs) {
      const { verify } = await readRecord(core.deps.db, run);
      expect(energy.get(run.id)).toBe(verify.ok && verify.cost ? BigInt(verify.cost.totalUj) : 0n);
    }
    expect(energy.get(ids.resumed)).toBeGreaterThan(0n);
    expect(energy.get(ids.broken)).toBe(0n);
  }, 240_000);

  it('reads the listed sessions’ records in one batch: statements for 11 sessions = statements for 1', async () => {
    // A tenant of its own: one parked session (its record has segments and an attestation), then ten more.
    const other = await t.tenant('many', { session: { maxSessions: 40, memberReserve: 0 } });
    const p = await t.core.services.auth.authenticate(other);
    const as = (method: string, path: string, body?: unknown) =>
      call(t.app, method, path, { key: other, ...(body === undefined ? {} : { body }) });
    const openOne = async (park: boolean) => {
      const r = await as('POST', '/sandboxes', { ttlSec: 600, idleTimeoutSec: 600 });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const id = (r.body.run as { id: string }).id;
      expect((await as('POST', `/sandboxes/${id}/exec`, { command: ['true'] })).status).toBe(200);
      if (park) expect((await as('POST', `/sandboxes/${id}/suspend`)).status).toBe(200);
    };
    await openOne(true);
    const { service, statementsOf } = counted(later());
    expect(await service.list(p)).toHaveLength(1);
    const one = await statementsOf(() => service.list(p));
    for (let i = 0; i < 10; i++) await openOne(i % 2 === 0);
    expect(await service.list(p)).toHaveLength(11);
    const eleven = await statementsOf(() => service.list(p));
    console.log(`statements per GET /sandboxes: 1 session → ${one}, 11 sessions → ${eleven}`);
    expect(eleven).toBe(one);
  }, 240_000);
});
