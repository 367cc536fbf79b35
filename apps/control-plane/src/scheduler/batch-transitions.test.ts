// settleMany reads without locks (planSettle) and writes in one statement (writeSettle) that keeps only runs
// still running at the row version read. A run changed between the two is never written from the stale read:
// cancelled → its late result is dropped; changed otherwise → settleMany reads it again and settles it.
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import type { Executor } from '../db/tx.js';
import { type Finished, planSettle, readRuns, settleMany, writeSettle } from './batch-transitions.js';
import { claimAndStart, type StartedRun } from './claim-start.js';
import { INLINE_KINDS } from './dispatch-loop.js';

const done = (tenant: string, runId: string): Finished => ({
  tenant,
  runId,
  event: { type: 'succeed' },
  extras: { outputs: { summary: 'ok', exitCode: 0 }, usage: { costUsd: 0.5 } },
});

describe('settleMany', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  async function twoRunning(): Promise<[string, string]> {
    t = await testCore({ scheduler: { enabled: false } });
    const ids: string[] = [];
    for (const m of ['x', 'y']) {
      const { run } = await t.core.services.runs.create(t.admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message: m } },
      });
      ids.push(run.id);
    }
    expect(await claimAndStart(t.core.internals.deps.db, 2, new Date(), INLINE_KINDS)).toHaveLength(2);
    return [ids[0]!, ids[1]!];
  }

  const settledFacts = async (runId: string) =>
    t.core.internals.deps.db
      .selectFrom('events')
      .select('payload')
      .where('run_id', '=', runId)
      .where('kind', '=', 'run.settled')
      .execute();

  it('drops the late result of a run cancelled between its read and its write', async () => {
    const [x, y] = await twoRunning();
    const deps = t.core.internals.deps;
    const items = [done('default', x), done('default', y)];
    const plan = await planSettle(deps.db, deps, items);
    expect(plan.items).toHaveLength(2);
    await t.core.services.runs.cancel(t.admin, x);
    expect((await writeSettle(deps.db, plan)).ids).toEqual([y]);
    // settleMany's next read sees x terminal: nothing left to settle.
    expect(await settleMany(deps.db, deps, items)).toEqual([]);

    expect((await t.core.services.runs.get(t.admin, x)).status).toBe('cancelled');
    expect((await t.core.services.runs.get(t.admin, y)).status).toBe('succeeded');
    expect((await settledFacts(x)).map((e) => e.payload.outcome)).toEqual(['cancelled']);
    expect((await settledFacts(y)).map((e) => e.payload.outcome)).toEqual(['succeeded']);
    for (const id of [x, y]) expect((await t.core.services.runs.record(t.admin, id)).verify.ok).toBe(true);
    const ten = await deps.db
      .selectFrom('adm_tenants_now')
      .select(['running', 'queued'])
      .executeTakeFirstOrThrow();
    expect(ten).toEqual({ running: 0, queued: 0 });
    const envelopes = await deps.db
      .selectFrom('adm_envelopes_now')
      .select(['in_flight', 'spent_usd'])
      .execute();
    expect(envelopes).toEqual([{ in_flight: 0, spent_usd: 0.5 }]);
  });

  it('reads a run again when its row changed in any other way, and settles it from the new row', async () => {
    const [x, y] = await twoRunning();
    const deps = t.core.internals.deps;
    const items = [done('default', x), done('default', y)];
    const plan = await planSettle(deps.db, deps, items);
    await deps.db
      .updateTable('runs')
      .set({ expires_at: '2100-01-01T00:00:00.000Z' })
      .where('id', '=', x)
      .execute();
    expect((await writeSettle(deps.db, plan)).ids).toEqual([y]);
    expect(await settleMany(deps.db, deps, items)).toEqual([x]);
    const row = await deps.db
      .selectFrom('runs')
      .select(['status', 'expires_at'])
      .where('id', '=', x)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'succeeded', expires_at: new Date('2100-01-01T00:00:00.000Z') });
    for (const id of [x, y]) {
      expect((await t.core.services.runs.record(t.admin, id)).verify).toMatchObject({ ok: true, length: 2 });
      expect(await settledFacts(id)).toHaveLength(1);
    }
  });

  it('settles nothing twice: a run repeated in a batch, or settled again, is settled once', async () => {
    const [x, y] = await twoRunning();
    const deps = t.core.internals.deps;
    const items = [done('default', x), done('default', y), done('default', x)];
    expect((await settleMany(deps.db, deps, items)).sort()).toEqual([x, y].sort());
    expect(await settleMany(deps.db, deps, items)).toEqual([]);
    for (const id of [x, y]) expect(await settledFacts(id)).toHaveLength(1);
    const envelopes = await deps.db
      .selectFrom('adm_envelopes_now')
      .select(['in_flight', 'spent_usd'])
      .execute();
    expect(envelopes).toEqual([{ in_flight: 0, spent_usd: 1 }]);
  });
});

// The inline lane's claim carries each started run's row (claim-start.ts `carry`): its settle is planned from
// it and written without reading the row back — unless the row changed since, which its version tells.
describe('settleMany from a carrying claim', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  async function twoCarried(): Promise<StartedRun[]> {
    t = await testCore({ scheduler: { enabled: false } });
    for (const m of ['x', 'y'])
      await t.core.services.runs.create(t.admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message: m } },
      });
    const lease = { holder: 'test', leaseMs: 10_000, inProcess: true, carry: true };
    const started = await claimAndStart(t.core.internals.deps.db, 2, new Date(), INLINE_KINDS, lease);
    expect(started).toHaveLength(2);
    return started;
  }

  const carried = (r: StartedRun): Finished => ({ ...done(r.tenant, r.runId), carried: r.carried! });

  /** The executor with every kysely-built SELECT counted (the settle's read is one; its write is raw SQL). */
  function countingSelects(db: Executor) {
    const seen = { selects: 0 };
    const ex = db.withPlugin({
      transformQuery: (a) => {
        if (a.node.kind === 'SelectQueryNode') seen.selects += 1;
        return a.node;
      },
      transformResult: async (a) => a.result,
    });
    return { ex, seen };
  }

  it('carries exactly the row, version and segments the settle would read back', async () => {
    const started = await twoCarried();
    const read = await readRuns(
      t.core.internals.deps.db,
      started.map((r) => r.runId),
    );
    for (const r of started) {
      expect(r.carried).toBeDefined();
      expect(r.carried).toEqual(read.get(r.runId));
    }
  });

  it('settles without reading the rows back, and the records verify', async () => {
    const started = await twoCarried();
    const deps = t.core.internals.deps;
    const { ex, seen } = countingSelects(deps.db);
    expect((await settleMany(ex, deps, started.map(carried))).sort()).toEqual(
      started.map((r) => r.runId).sort(),
    );
    expect(seen.selects).toBe(0);
    for (const r of started) {
      expect((await t.core.services.runs.get(t.admin, r.runId)).status).toBe('succeeded');
      expect((await t.core.services.runs.record(t.admin, r.runId)).verify).toMatchObject({
        ok: true,
        length: 2,
      });
    }
  });

  it('reads a run again when its row changed since the claim, and drops a cancelled one', async () => {
    const [x, y] = await twoCarried();
    const deps = t.core.internals.deps;
    await deps.db
      .updateTable('runs')
      .set({ expires_at: '2100-01-01T00:00:00.000Z' })
      .where('id', '=', x!.runId)
      .execute();
    await t.core.services.runs.cancel(t.admin, y!.runId);
    const { ex, seen } = countingSelects(deps.db);
    expect(await settleMany(ex, deps, [carried(x!), carried(y!)])).toEqual([x!.runId]);
    expect(seen.selects).toBe(1); // the two stale carries, read once
    expect((await t.core.services.runs.get(t.admin, x!.runId)).status).toBe('succeeded');
    expect((await t.core.services.runs.get(t.admin, y!.runId)).status).toBe('cancelled');
    expect((await t.core.services.runs.record(t.admin, x!.runId)).verify).toMatchObject({
      ok: true,
      length: 2,
    });
  });
});
