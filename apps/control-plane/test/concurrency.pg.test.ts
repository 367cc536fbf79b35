// Two control-plane replicas on one live PostgreSQL: 1,000 runs, tenant quotas, queue caps, cancels racing
// settles. Runs only with EVERDICT_TEST_DATABASE_URL (CI sets it); says so loudly otherwise.
import { configureTenant } from '@everdict/admission';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgAdmissionStore } from '../src/admission-store/sql/store.js';
import { type Core, startCore } from '../src/core.js';
import { numeric } from '../src/db/numeric.js';
import type { Principal } from '../src/services/index.js';
import { eventually, OFFLINE_RUNNER } from './core.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/concurrency.pg.test.ts');
const KEY = 'evk_replica_test_key_00000000000000';

describe.runIf(LIVE_PG)('two replicas on one PostgreSQL', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;
  let tenants: { a: Principal; b: Principal }[] = [];

  beforeAll(async () => {
    live = await createLiveDatabase();
    const opts = {
      databaseUrl: live.url,
      bootstrapKey: KEY,
      executors: [OFFLINE_RUNNER],
      policy: { maxConcurrent: 4, maxQueued: 2_000 },
      scheduler: { pollMs: 100, inlineConcurrency: 12 },
    };
    a = await startCore(opts);
    b = await startCore(opts);
    const admin = await a.services.auth.authenticate(KEY);
    tenants = [{ a: admin, b: await b.services.auth.authenticate(KEY) }];
    for (const id of ['t1', 't2']) {
      const t = await a.services.auth.createTenant(admin, { id });
      tenants.push({
        a: await a.services.auth.authenticate(t.key.key),
        b: await b.services.auth.authenticate(t.key.key),
      });
    }
  }, 60_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
  });

  it('runs 1,000 runs through both replicas: each dispatched once, settled once, quotas held, records verify', async () => {
    const db = a.internals.deps.db;
    const ids: string[] = [];
    const cancelled = new Set<string>();
    let maxRunning = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const rows = await db
          .selectFrom('runs')
          .select(['tenant_id', db.fn.countAll().as('n')])
          .where('status', '=', 'running')
          .groupBy('tenant_id')
          .execute();
        for (const r of rows) maxRunning = Math.max(maxRunning, numeric(r.n));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const N = 1_000;
    let next = 0;
    const worker = async (w: number) => {
      while (next < N) {
        const i = next++;
        const t = tenants[i % tenants.length]!;
        const [mine, other] = w % 2 === 0 ? [a, b] : [b, a];
        const p = w % 2 === 0 ? t.a : t.b;
        const { run } = await mine.services.runs.create(p, {
          kind: 'analysis',
          subject: { config: { fn: 'sleep', ms: 1 + (i % 7) } },
        });
        ids.push(run.id);
        if (i % 10 === 0) {
          // Race a cancel from the other replica against dispatch and settle.
          const q = w % 2 === 0 ? t.b : t.a;
          await other.services.runs.cancel(q, run.id).then(
            () => cancelled.add(run.id),
            (e: { httpStatus?: number }) => expect(e.httpStatus).toBe(409),
          );
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, w) => worker(w)));
    await eventually(
      async () => {
        const r = await db
          .selectFrom('runs')
          .select(db.fn.countAll().as('n'))
          .where('status', 'in', ['queued', 'running'])
          .executeTakeFirstOrThrow();
        return numeric(r.n) === 0 ? true : undefined;
      },
      120_000,
      200,
    );
    sampling = false;
    await sampler;

    expect(ids).toHaveLength(N);
    expect(maxRunning).toBeLessThanOrEqual(4);
    const perRun = await db
      .selectFrom('events')
      .select(['run_id', 'kind', db.fn.countAll().as('n')])
      .where('kind', 'in', ['run.started', 'run.settled'])
      .groupBy(['run_id', 'kind'])
      .execute();
    expect(perRun.every((r) => numeric(r.n) === 1)).toBe(true);
    expect(perRun.filter((r) => r.kind === 'run.settled')).toHaveLength(N);
    const statuses = await db
      .selectFrom('runs')
      .select(['status', db.fn.countAll().as('n')])
      .groupBy('status')
      .execute();
    const byStatus = Object.fromEntries(statuses.map((s) => [s.status, numeric(s.n)]));
    expect(byStatus.cancelled ?? 0).toBeGreaterThanOrEqual(cancelled.size);
    expect((byStatus.succeeded ?? 0) + (byStatus.cancelled ?? 0)).toBe(N);
    const counters = await db.selectFrom('adm_tenants_now').select(['queued', 'running']).execute();
    expect(counters.every((c) => c.queued === 0 && c.running === 0)).toBe(true);
    const inflight = await db.selectFrom('adm_envelopes_now').select('in_flight').execute();
    expect(inflight.every((e) => e.in_flight === 0)).toBe(true);
    const dispatchedBoth = (a.internals.dispatch?.dispatched ?? 0) + (b.internals.dispatch?.dispatched ?? 0);
    expect(dispatchedBoth).toBe(perRun.filter((r) => r.kind === 'run.started').length);
    expect(a.internals.dispatch?.dispatched).toBeGreaterThan(0);
    expect(b.internals.dispatch?.dispatched).toBeGreaterThan(0);
    for (const id of [...cancelled].slice(0, 30).concat(ids.slice(0, 30))) {
      const row = await db
        .selectFrom('runs')
        .select('tenant_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      const p = tenants.find((x) => x.a.tenantId === row.tenant_id)?.a ?? tenants[0]!.a;
      expect((await a.services.runs.record(p, id)).verify.ok).toBe(true);
    }
  }, 180_000);

  it('never admits past a queue cap with both replicas admitting at once', async () => {
    const admin = tenants[0]!.a;
    const t = await a.services.auth.createTenant(admin, { id: 'capped' });
    await configureTenant(new PgAdmissionStore(a.internals.deps.db), 'capped', { maxQueued: 50 });
    const pa = await a.services.auth.authenticate(t.key.key);
    const pb = await b.services.auth.authenticate(t.key.key);
    const cmd = { kind: 'command', subject: { path: 'x', image: 'i', command: ['x'] } };
    const results = await Promise.allSettled(
      Array.from({ length: 120 }, (_, i) =>
        i % 2 ? a.services.runs.create(pa, cmd) : b.services.runs.create(pb, cmd),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter(
      (r) => r.status === 'rejected' && (r.reason as { httpStatus?: number }).httpStatus === 429,
    ).length;
    expect(ok).toBe(50);
    expect(refused).toBe(70);
  }, 60_000);
});
