// The dispatch loop frees an execution slot when the execution returns (the settle follows, group-committed),
// bounds executions + unsettled results to BACKLOG_FACTOR × concurrency, keeps unsettled runs `running` and
// counted against their tenant, and stop() waits for every pending settle.
import type { KyselyPlugin } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, type TestCore, testCore } from '../../test/core.js';
import { leasePolicy } from '../leases/policy.js';
import { type Deps, DISPATCH_CHANNEL } from '../services/context.js';
import { settleOutcome } from './batch-transitions.js';
import { BACKLOG_FACTOR, DispatchLoop } from './dispatch-loop.js';
import type { SettleBatch } from './settle-batcher.js';

/** A settle that waits for `open()` before settling for real; `steps` records what happened, in order. */
function heldSettle() {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const steps: string[] = [];
  let entered = 0;
  const settleBatch: SettleBatch = async (deps, items) => {
    entered += items.length;
    await gate;
    const out = await settleOutcome(deps.db, deps, items);
    steps.push(`settled ${items.length}`);
    return out;
  };
  return { settleBatch, open: () => open(), steps, entered: () => entered };
}

/** The core's deps with a database that counts the claim statements it sends. */
function countingClaims(t: TestCore) {
  let claims = 0;
  const counting: KyselyPlugin = {
    transformQuery: (args) => {
      if (JSON.stringify(args.node).includes('prepared:claim_start')) claims++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  const deps = t.core.internals.deps;
  return { deps: { ...deps, db: deps.db.withPlugin(counting) }, claims: () => claims };
}

/**
 * A started loop that only start(), a NOTIFY and its own freed slots wake: no poll and no sweep within a test
 * (both ten minutes away), so what it claims is what those wakes caused.
 */
async function quietLoop(deps: Deps, concurrency: number, settleBatch?: SettleBatch) {
  const loop = new DispatchLoop(deps, {
    pollMs: 600_000,
    concurrency,
    timeoutMs: 3_000,
    lease: leasePolicy({ leaseMs: 600_000, sweepMs: 600_000 }),
    ...(settleBatch ? { settleBatch } : {}),
  });
  await loop.start();
  return loop;
}

describe('DispatchLoop', () => {
  let t: TestCore;
  let loop: DispatchLoop | undefined;
  afterEach(async () => {
    await loop?.stop();
    loop = undefined;
    await t.close();
  });

  const statuses = async () => {
    const db = t.core.internals.deps.db;
    const rows = await db.selectFrom('runs').select('status').execute();
    const by: Record<string, number> = {};
    for (const r of rows) by[r.status] = (by[r.status] ?? 0) + 1;
    return by;
  };
  const createEchoes = async (n: number) => {
    for (let i = 0; i < n; i++)
      await t.core.services.runs.create(t.admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message: `r${i}` } },
      });
  };

  it('starts past its concurrency while settles lag, up to the backlog bound, and no further', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    await createEchoes(12);
    const held = heldSettle();
    const concurrency = 2;
    loop = new DispatchLoop(t.core.internals.deps, {
      pollMs: 25,
      concurrency,
      timeoutMs: 2_000,
      settleBatch: held.settleBatch,
    });
    await loop.start();
    const bound = BACKLOG_FACTOR * concurrency;
    await eventually(async () => (loop?.dispatched === bound ? true : undefined));
    // Two more cycles (polls, wakes) refused to claim because the backlog was full, and started nothing.
    const refusals = loop.heldBackCycles;
    await eventually(async () => ((loop?.heldBackCycles ?? 0) >= refusals + 2 ? true : undefined));
    expect(loop.dispatched).toBe(bound);
    // Unsettled runs stay running in the ledger and count against their tenant's quota.
    expect(await statuses()).toEqual({ running: bound, queued: 12 - bound });
    const ten = await t.core.internals.deps.db
      .selectFrom('adm_tenants_now')
      .select(['running', 'queued'])
      .where('tenant', '=', 'default')
      .executeTakeFirstOrThrow();
    expect(ten).toEqual({ running: bound, queued: 12 - bound });

    held.open();
    await eventually(async () => ((await statuses()).succeeded === 12 ? true : undefined));
    expect(loop.dispatched).toBe(12);
    const after = await t.core.internals.deps.db
      .selectFrom('adm_tenants_now')
      .select(['running', 'queued'])
      .where('tenant', '=', 'default')
      .executeTakeFirstOrThrow();
    expect(after).toEqual({ running: 0, queued: 0 });
  });

  it('stop() waits for every pending settle (graceful shutdown)', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    await createEchoes(3);
    const held = heldSettle();
    loop = new DispatchLoop(t.core.internals.deps, {
      pollMs: 25,
      concurrency: 4,
      timeoutMs: 2_000,
      settleBatch: held.settleBatch,
    });
    await loop.start();
    await eventually(async () => (loop?.dispatched === 3 ? true : undefined));
    const stopping = loop.stop().then(() => {
      held.steps.push('stopped');
    });
    // Every execution returned and the first settle is held: stop() can only be waiting for settles now.
    await eventually(async () => (loop?.executingCount === 0 && held.entered() > 0 ? true : undefined));
    expect(held.steps).toEqual([]);
    held.open();
    await stopping;
    // stop() resolved only after every settle committed.
    expect(held.steps.at(-1)).toBe('stopped');
    const settledBefore = held.steps.slice(0, -1).map((s) => Number(s.replace('settled ', '')));
    expect(settledBefore.reduce((a, b) => a + b, 0)).toBe(3);
    expect(await statuses()).toEqual({ succeeded: 3 });
  });

  it("a settle that frees a tenant's capacity wakes the loop: runs held by max_concurrent start without a poll", async () => {
    // Tenant cap 2, 6 runs, no poll and no sweep within the test: the loop claims 2 — short of its capacity, so
    // the cycle ends there, and the freed slots do not claim again (a later claim, woken by a late echo of the
    // creates' NOTIFYs, finds the tenant at its cap: the settles are held). Only the settles' release can wake
    // it. (A lone replica on PostgreSQL announced the creates in memory before the loop listened: no echo.)
    t = await testCore({ scheduler: { enabled: false }, policy: { maxConcurrent: 2 } });
    await createEchoes(6);
    const held = heldSettle();
    const counted = countingClaims(t);
    loop = await quietLoop(counted.deps, 8, held.settleBatch);
    try {
      // Both executions returned (the first settle batch held, the rest behind it); the loop is idle.
      await eventually(async () =>
        loop?.dispatched === 2 && loop.executingCount === 0 && held.entered() >= 1 && counted.claims() >= 1
          ? true
          : undefined,
      );
      expect(await statuses()).toEqual({ running: 2, queued: 4 });
    } finally {
      held.open(); // whatever happened: stop() in afterEach waits for the settles
    }
    await eventually(async () => ((await statuses()).succeeded === 6 ? true : undefined));
    expect(loop.dispatched).toBe(6);
  });

  it('a claim short of its capacity ends the cycle: no empty claim after it', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    // Each create's NOTIFY is sent after its commit, unawaited (on live PostgreSQL from another pooled
    // connection): the test hears each one before the next create, so none can reach the loop once it listens.
    let heard = 0;
    const unlisten = await t.core.internals.ldb.listen(DISPATCH_CHANNEL, () => {
      heard += 1;
    });
    for (let i = 0; i < 3; i++) {
      const before = heard;
      await t.core.services.runs.create(t.admin, {
        kind: 'analysis',
        subject: { config: { fn: 'sleep', ms: 60_000 } },
      });
      await eventually(async () => (heard > before ? true : undefined));
    }
    await unlisten();
    const counted = countingClaims(t);
    loop = await quietLoop(counted.deps, 16); // only start() wakes it
    await eventually(async () => (loop?.dispatched === 3 ? true : undefined));
    // The executions sleep: nothing freed a slot or woke the loop; its one cycle claimed once (3 of 16).
    expect(await statuses()).toEqual({ running: 3 });
    expect(counted.claims()).toBe(1);
  });

  it('a freed slot claims again only when runs may be waiting for it', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const counted = countingClaims(t);
    loop = await quietLoop(counted.deps, 4);
    await eventually(async () => (counted.claims() >= 1 ? true : undefined)); // start()'s claim: nothing queued
    await createEchoes(1); // its NOTIFY wakes the loop: one claim takes it (1 of 4)
    await eventually(async () => ((await statuses()).succeeded === 1 ? true : undefined));
    // The execution returned and its settle committed: its freed slot claimed nothing (the last claim had
    // taken every run it could see). Before, every freed slot claimed again: an empty claim per run.
    expect(counted.claims()).toBe(2);
  });

  it('a freed slot claims at once when a wake found its loop full (no wait for a poll)', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    loop = await quietLoop(t.core.internals.deps, 2);
    // C is another tenant's: A's settle releases A's tenant, which has nothing queued — no release wake for C.
    const made = await t.core.services.auth.createTenant(t.admin, { id: 'other' });
    const other = await t.core.services.auth.authenticate(made.key.key);
    const create = (config: Record<string, unknown>, who = t.admin) =>
      t.core.services.runs.create(who, { kind: 'analysis', subject: { config } });
    // A: a claim short of its capacity (1 of 2) — nothing else was waiting.
    await create({ fn: 'sleep', ms: 400 });
    await eventually(async () => (loop?.dispatched === 1 ? true : undefined));
    // B fills the last slot; C's wake then finds the loop full.
    await create({ fn: 'sleep', ms: 60_000 });
    await eventually(async () => (loop?.dispatched === 2 ? true : undefined));
    await create({ fn: 'echo', message: 'c' }, other);
    // A's freed slot takes C at once (the poll would take ten minutes).
    await eventually(async () => ((await statuses()).succeeded === 2 ? true : undefined));
    expect(loop.dispatched).toBe(3);
  });

  const ttlSleeper = (ms: number) =>
    t.core.services.runs.create(t.admin, {
      kind: 'analysis',
      ttlSec: 1,
      subject: { config: { fn: 'sleep', ms } },
    });

  it("a run's expiry (ttlSec) stops its analysis there: failed `expired`, before its own timeout", async () => {
    t = await testCore({ scheduler: { enabled: false } });
    loop = await quietLoop(t.core.internals.deps, 2); // its timeout: 3 s
    const { run } = await ttlSleeper(60_000);
    const settled = await eventually(async () => {
      const r = await t.core.services.runs.get(t.admin, run.id);
      return r.status === 'failed' ? r : undefined;
    });
    expect(settled.error).toMatchObject({ code: 'expired', retryable: false });
    expect(settled.error?.message).toBe(`its TTL ran out (expiresAt ${run.expiresAt})`);
    expect(Date.parse(settled.settledAt ?? '')).toBeLessThan(Date.parse(settled.startedAt ?? '') + 3_000);
  });

  it('a run already past its expiry when it is claimed never starts its analysis', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const { run } = await ttlSleeper(0);
    const expiresAt = Date.parse(run.expiresAt ?? '');
    await eventually(async () => (Date.now() > expiresAt ? true : undefined)); // no loop claims it meanwhile
    loop = await quietLoop(t.core.internals.deps, 2);
    const settled = await eventually(async () => {
      const r = await t.core.services.runs.get(t.admin, run.id);
      return r.status === 'failed' ? r : undefined;
    });
    // `sleep 0` would have succeeded at once: it failed, so it never ran.
    expect(settled.error).toMatchObject({ code: 'expired' });
  });
});
