// Two replicas settling batches that cover the same envelopes and tenant rows, in opposite orders, at once:
// every multi-row transaction takes the hot rows in one global order (runs → slots → envelopes → tenant
// rows), so no transaction may ever end in a deadlock (40P01). Runs only with EVERDICT_TEST_DATABASE_URL.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Core, startCore } from '../src/core.js';
import { type Finished, settleMany } from '../src/scheduler/batch-transitions.js';
import { claimAndStart } from '../src/scheduler/claim-start.js';
import { INLINE_KINDS } from '../src/scheduler/dispatch-loop.js';
import type { Principal } from '../src/services/index.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/settle-order.pg.test.ts');
const KEY = 'evk_settle_order_test_key_000000000';
const TENANTS = 8;
const ROUNDS = 12;

/** Resolves once no backend but the caller's is connected to this database (generous deadline). */
async function backendsGone(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      if (r.rows[0]?.n === 0) return;
      if (Date.now() > deadline) throw new Error(`${r.rows[0]?.n} backends still connected`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await c.end();
  }
}

async function deadlocksOf(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ n: string }>(
      'SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return Number(r.rows[0]?.n ?? 0);
  } finally {
    await c.end();
  }
}

function pgCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e
    ? String((e as { code: unknown }).code)
    : undefined;
}

describe.runIf(LIVE_PG)('settle batches on two replicas', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;
  const principals: Principal[] = [];
  let closed = false;

  beforeAll(async () => {
    live = await createLiveDatabase();
    // No scheduler: the test claims, starts and settles the runs itself, in the batches it chooses.
    const opts = {
      databaseUrl: live.url,
      bootstrapKey: KEY,
      policy: { maxConcurrent: 1_000, maxQueued: 10_000 },
      scheduler: { enabled: false },
    };
    a = await startCore(opts);
    b = await startCore(opts);
    const admin = await a.services.auth.authenticate(KEY);
    principals.push(admin);
    for (let t = 1; t < TENANTS; t++) {
      const made = await a.services.auth.createTenant(admin, { id: `so-${t}` });
      principals.push(await a.services.auth.authenticate(made.key.key));
    }
  }, 60_000);

  afterAll(async () => {
    if (!closed) {
      await a?.close();
      await b?.close();
    }
    await live?.drop();
  });

  it('settles overlapping envelope sets concurrently without a single 40P01', async () => {
    // Per tenant, 2×ROUNDS running runs (each charges its tenant's root envelope and counter row).
    const byTenant = new Map<string, string[]>();
    for (const p of principals) {
      const ids: string[] = [];
      for (let i = 0; i < 2 * ROUNDS; i++) {
        const { run } = await a.services.runs.create(p, {
          kind: 'analysis',
          subject: { config: { fn: 'echo', message: `r${i}` } },
          // Every other run draws from its own slice: paths of one or two envelopes per run.
          ...(i % 2 === 0 ? { envelope: { capUsd: 10 } } : {}),
        });
        ids.push(run.id);
      }
      byTenant.set(p.tenantId, ids);
    }
    const total = TENANTS * 2 * ROUNDS;
    const started = await claimAndStart(a.internals.deps.db, total, new Date(), INLINE_KINDS);
    expect(started).toHaveLength(total);

    const finished = (tenant: string, runId: string, i: number): Finished => ({
      tenant,
      runId,
      event: { type: 'succeed' },
      extras: { outputs: { summary: 'ok', exitCode: 0 }, usage: { costUsd: 0.001 * (i + 1) } },
    });
    const tenantsUp = [...byTenant.keys()].sort();
    const tenantsDown = [...tenantsUp].reverse();
    let deadlocks = 0;
    let settled = 0;
    const before = await deadlocksOf(live.url);
    // Each round, replica A settles one run of every tenant (tenants ascending) while replica B settles
    // another run of every tenant (tenants descending): the same 8 root envelopes and 8 tenant rows, in
    // opposite input orders, in two statements at once. No retry wrapper: a deadlock would surface here.
    const settleOn = async (core: Core, items: Finished[]) => {
      try {
        const ids = await settleMany(core.internals.deps.db, core.internals.deps, items);
        settled += ids.length;
      } catch (e) {
        if (pgCode(e) === '40P01') deadlocks++;
        else throw e;
      }
    };
    for (let round = 0; round < ROUNDS; round++) {
      const left = tenantsUp.map((t, i) => finished(t, byTenant.get(t)![2 * round]!, i));
      const right = tenantsDown.map((t, i) => finished(t, byTenant.get(t)![2 * round + 1]!, i));
      await Promise.all([settleOn(a, left), settleOn(b, right)]);
    }

    expect(deadlocks).toBe(0);
    expect(settled).toBe(total);
    const db = a.internals.deps.db;
    const counters = await db.selectFrom('adm_tenants_now').select(['running', 'queued']).execute();
    expect(counters.every((c) => c.running === 0 && c.queued === 0)).toBe(true);
    const inflight = await db.selectFrom('adm_envelopes_now').select('in_flight').execute();
    expect(inflight.every((e) => e.in_flight === 0)).toBe(true);
    // The server's own count for this database (a backend reports it when it goes idle or exits).
    closed = true;
    await a.close();
    await b.close();
    // A backend reports its counters when it exits: wait until every backend of the replicas has gone.
    await backendsGone(live.url);
    expect((await deadlocksOf(live.url)) - before).toBe(0);
  }, 120_000);
});
