// claimAndStart (one statement) against what the claim + transition path wrote before it: the run rows and
// `run.started` facts equal run-model's `transition(start)` of the queued rows; the admission rows move as a
// claim moves them; WFQ order, the stored aging bound and per-tenant quotas hold.
import { configureGlobal, finishTag } from '@everdict/admission';
import { transition } from '@everdict/run-model';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { PgAdmissionStore } from '../admission-store/sql/store.js';
import { iso } from '../db/numeric.js';
import { rowToRun, selectRunRows } from '../ledger/runs.js';
import { factsToEvents } from '../services/transition.js';
import { claimAndStart } from './claim-start.js';
import { INLINE_KINDS } from './dispatch-loop.js';

type Cls = 'batch' | 'background' | 'interactive';
const echo = (cls: Cls, message: string = cls) => ({
  kind: 'analysis',
  subject: { config: { fn: 'echo', message } },
  class: cls,
});

describe('claimAndStart', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  const db = () => t.core.internals.deps.db;
  const create = async (cls: Cls, message?: string) =>
    (await t.core.services.runs.create(t.admin, echo(cls, message))).run.id;

  it('writes the run rows and run.started facts that transition(start) gives, and moves the admission rows', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const ids = [await create('interactive'), await create('batch'), await create('background')];
    const before = await selectRunRows(db()).selectAll().where('id', 'in', ids).execute();
    const lastEvent = await db()
      .selectFrom('events')
      .select((eb) => eb.fn.max('id').as('id'))
      .executeTakeFirstOrThrow();
    const now = new Date(Date.now() + 5);
    const at = now.toISOString();

    const started = await claimAndStart(db(), 10, now, INLINE_KINDS);
    // WFQ: interactive, then background, then batch.
    expect(started.map((s) => s.runId)).toEqual([ids[0], ids[2], ids[1]]);
    expect(started.map((s) => s.class)).toEqual(['interactive', 'background', 'batch']);
    for (const s of started) {
      expect(s.tenant).toBe('default');
      expect(s.waitedMs).toBe(now.getTime() - s.enqueuedAt);
      expect(s.subject).toEqual({ config: { fn: 'echo', message: s.class } });
    }

    const after = new Map(
      (await selectRunRows(db()).selectAll().where('id', 'in', ids).execute()).map((r) => [r.id, r]),
    );
    const expected = [];
    for (const id of started.map((s) => s.runId)) {
      const row = before.find((r) => r.id === id)!;
      const result = transition(rowToRun(row), { type: 'start' }, at);
      if (!result.ok) throw result.error;
      const got = after.get(id)!;
      // The start also counts the run's attempt: the epoch of its lease (leases/).
      expect(rowToRun(got)).toEqual({ ...rowToRun(row), ...result.patch, attempt: row.attempt + 1 });
      expect(Number(got.interval_started_at)).toBe(Date.parse(at));
      expect(got.interval_head).toBe(row.record_head);
      expect(got.record_head).toBe(row.record_head);
      expected.push(...factsToEvents(result.facts));
    }
    const events = await db()
      .selectFrom('events')
      .selectAll()
      .where('id', '>', lastEvent.id ?? 0)
      .orderBy('id')
      .execute();
    expect(
      events.map((e) => ({
        tenant: e.tenant_id,
        kind: e.kind,
        runId: e.run_id,
        at: iso(e.created_at),
        data: e.payload,
      })),
    ).toEqual(expected);

    expect(await db().selectFrom('adm_queue').selectAll().execute()).toHaveLength(0);
    const slots = await db().selectFrom('adm_slots').select(['status', 'started_at']).execute();
    expect(slots.every((s) => s.status === 'running' && Number(s.started_at) === now.getTime())).toBe(true);
    const ten = await db()
      .selectFrom('adm_tenants_now')
      .selectAll()
      .where('tenant', '=', 'default')
      .executeTakeFirstOrThrow();
    expect(ten).toMatchObject({
      running: 3,
      queued: 0,
      queued_interactive: 0,
      queued_background: 0,
      queued_batch: 0,
    });
    const wfq = await db().selectFrom('adm_wfq').selectAll().execute();
    const vtime = new Map(
      (await db().selectFrom('adm_vtime').selectAll().execute()).map((v) => [v.lane, v.v]),
    );
    // Each lane's clock reached the last finish tag served (weight 1: finishTag(start_v, n, 1)).
    for (const w of wfq) expect(vtime.get(w.lane)).toBe(finishTag(w.start_v, Number(w.n), 1));

    // Nothing left: a second claim starts nothing and writes nothing.
    expect(await claimAndStart(db(), 10, new Date(now.getTime() + 1), INLINE_KINDS)).toEqual([]);
    const eventsNow = await db()
      .selectFrom('events')
      .select('id')
      .where('id', '>', lastEvent.id ?? 0)
      .execute();
    expect(eventsNow).toHaveLength(events.length);
  });

  it('starts at most max_concurrent - running per tenant, reading the counter of the locked row', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await create('interactive', `r${i}`));
    await db().updateTable('adm_tenants').set({ max_concurrent: 3, running: 1 }).execute();
    const first = await claimAndStart(db(), 16, new Date(), INLINE_KINDS);
    expect(first).toHaveLength(2);
    expect(await claimAndStart(db(), 16, new Date(), INLINE_KINDS)).toEqual([]);
    await db().updateTable('adm_tenants').set({ max_concurrent: 10 }).execute();
    // Capacity bounds a claim; the rest follow in FIFO (seq) order within the lane.
    const next = await claimAndStart(db(), 2, new Date(), INLINE_KINDS);
    expect(next).toHaveLength(2);
    const last = await claimAndStart(db(), 2, new Date(), INLINE_KINDS);
    expect(last).toHaveLength(1);
    expect([...first, ...next, ...last].map((s) => s.runId)).toEqual(ids);
  });

  // A tenant with room for one run and a long interactive backlog fills the claim's window and candidate
  // pool; the kernel serves its one run and then the next tenant's — so does one claimAndStart (it claims
  // again while a claim dropped a candidate past its tenant's room).
  it('is not cut short by one tenant’s backlog past its room: it goes on to the next tenant’s run', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const backlog: string[] = [];
    // More than the candidate pool of a claim of 3 (3 × 2 + 8).
    for (let i = 0; i < 20; i++) backlog.push(await create('interactive', `b${i}`));
    const other = await t.core.services.auth.createTenant(t.admin, { id: 'acme' });
    const acme = await t.core.services.auth.authenticate(other.key.key);
    const theirs = (await t.core.services.runs.create(acme, echo('batch', 'acme'))).run.id;
    await db()
      .updateTable('adm_tenants')
      .set({ max_concurrent: 1 })
      .where('tenant', '=', 'default')
      .execute();
    const started = await claimAndStart(db(), 3, new Date(Date.now() + 5), INLINE_KINDS);
    expect(started.map((s) => s.runId)).toEqual([backlog[0], theirs]);
  }, 60_000);

  it('leaves other kinds queued (command runs wait for a driver)', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const cmd = await t.core.services.runs.create(t.admin, {
      kind: 'command',
      subject: { path: 'x', image: 'i', command: ['x'] },
    });
    const analysis = await create('batch');
    const started = await claimAndStart(db(), 4, new Date(), INLINE_KINDS);
    expect(started.map((s) => s.runId)).toEqual([analysis]);
    expect((await t.core.services.runs.get(t.admin, cmd.run.id)).status).toBe('queued');
  });

  it('claims several kinds in one WFQ order (one ordered scan per kind, merged)', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const command = async (cls: Cls) =>
      (
        await t.core.services.runs.create(t.admin, {
          kind: 'command',
          subject: { path: 'x', image: 'i', command: ['x'] },
          class: cls,
        })
      ).run.id;
    const a1 = await create('batch');
    const c1 = await command('interactive');
    const a2 = await create('background');
    const c2 = await command('background');
    const a3 = await create('background');
    const started = await claimAndStart(db(), 10, new Date(), ['analysis', 'command']);
    // Lane first (interactive, background, batch), then finish tag / seq across both kinds.
    expect(started.map((s) => s.runId)).toEqual([c1, a2, c2, a3, a1]);
  });

  async function firstClaimed(agingMs?: number) {
    t = await testCore({ scheduler: { enabled: false } });
    if (agingMs !== undefined) await configureGlobal(new PgAdmissionStore(db()), { agingMs });
    const batch = await create('batch');
    const interactive = await create('interactive');
    // A claim one second on: both have waited past a 10 ms bound (not the default 30 s one).
    const [claim] = await claimAndStart(db(), 1, new Date(Date.now() + 1000), INLINE_KINDS);
    return { batch, interactive, first: claim?.runId ?? 'none' };
  }

  it('serves interactive first while nothing has aged (default bound)', async () => {
    const r = await firstClaimed();
    expect(r.first).toBe(r.interactive);
  });

  it('honours the aging bound stored in the global policy: aged entries first, oldest first', async () => {
    const r = await firstClaimed(10);
    expect(r.first).toBe(r.batch);
  });

  it('skips a run whose row changed after `now` (transition would refuse it) and claims it later', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const id = await create('interactive');
    const past = new Date(Date.now() - 60_000);
    expect(await claimAndStart(db(), 1, past, INLINE_KINDS)).toEqual([]);
    expect((await claimAndStart(db(), 1, new Date(), INLINE_KINDS)).map((s) => s.runId)).toEqual([id]);
  });

  it('commits asynchronously for itself only: the connection is back to synchronous commit after a claim', async () => {
    // One connection (PGlite is one session anyway): a leaked setting would make the next create or settle on
    // it asynchronous too.
    t = await testCore({ scheduler: { enabled: false }, poolSize: 1 });
    await create('batch');
    expect(await claimAndStart(db(), 1, new Date(Date.now() + 5), INLINE_KINDS)).toHaveLength(1);
    const { rows } = await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(db());
    expect(rows[0]?.synchronous_commit).toBe('on');
  });

  it('a lease handed out (a runner, an agent host) commits synchronously; only an in-process one does not', async () => {
    // The setting a claim leaves for the rest of its transaction is the one its commit runs under: read it in the
    // same transaction, after the claim (the runner grant's shape: runners/leases.ts claims inside one).
    t = await testCore({ scheduler: { enabled: false } });
    await create('batch', 'a');
    await create('batch', 'b');
    const commitMode = (lease: { holder: string; leaseMs: number; inProcess?: boolean }) =>
      db()
        .transaction()
        .execute(async (tx) => {
          expect(await claimAndStart(tx, 1, new Date(Date.now() + 5), INLINE_KINDS, lease)).toHaveLength(1);
          const { rows } = await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(tx);
          return rows[0]?.synchronous_commit;
        });
    expect(await commitMode({ holder: 'rnr_1', leaseMs: 30_000 })).toBe('on');
    expect(await commitMode({ holder: 'inline_1', leaseMs: 30_000, inProcess: true })).toBe('off');
    // Both leases were granted, at the runs' first epoch.
    const leases = await db()
      .selectFrom('run_leases')
      .select(['holder', 'epoch'])
      .orderBy('holder')
      .execute();
    expect(leases.map((l) => [l.holder, Number(l.epoch)])).toEqual([
      ['inline_1', 1],
      ['rnr_1', 1],
    ]);
  });

  // A claimer restricted to some images (a runner's capabilities) sees the queue of those images only, as it
  // sees its kinds only: before, the window was the queue's head of every image, so a backlog of another
  // image (for a runner that is busy or gone) ahead of ours left this runner idle with its run queued.
  it('serves a restricted-image claimer the runs of its images behind a backlog of other images', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const other: string[] = [];
    for (let i = 0; i < 40; i++) other.push(await create('batch'));
    const mine = [await create('batch'), await create('interactive')];
    await sql`UPDATE runs SET subject = jsonb_set(subject, '{image}', '"img-a"') WHERE id = ANY(${other}::text[])`.execute(
      db(),
    );
    await sql`UPDATE runs SET subject = jsonb_set(subject, '{image}', '"img-b"') WHERE id = ANY(${mine}::text[])`.execute(
      db(),
    );
    const now = new Date(Date.now() + 5);
    const started = await claimAndStart(db(), 1, now, INLINE_KINDS, undefined, { images: ['img-b'] });
    // Its own order among its runs: interactive first.
    expect(started.map((s) => s.runId)).toEqual([mine[1]]);
    // Its batch run, behind the 40 batch runs of the other image.
    const young = await claimAndStart(db(), 5, now, INLINE_KINDS, undefined, { images: ['img-b'] });
    expect(young.map((s) => s.runId)).toEqual([mine[0]]);
    // Aged (an hour later, past the default bound): the aged arm sees its images only too.
    const later = await create('batch');
    await sql`UPDATE runs SET subject = jsonb_set(subject, '{image}', '"img-b"') WHERE id = ${later}`.execute(
      db(),
    );
    const aged = new Date(now.getTime() + 3_600_000);
    const rest = await claimAndStart(db(), 5, aged, INLINE_KINDS, undefined, { images: ['img-b'] });
    expect(rest.map((s) => s.runId)).toEqual([later]);
    // Every image ('*'): the rest, in order.
    const all = await claimAndStart(db(), 50, aged, INLINE_KINDS, undefined, { images: ['*'] });
    expect(all.map((s) => s.runId)).toEqual(other);
  });
});
