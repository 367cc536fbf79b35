// Released counters (migration 0021): a settle gives back in flight, spend and running on striped rows of its
// own, never on the envelope and tenant rows creates and claims lock; readers see the main rows less/plus the
// released sums; a fold moves the sums back without changing what readers see.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../../test/core.js';
import { LIVE_PG } from '../../../test/db.js';
import { type Finished, settleMany } from '../../scheduler/batch-transitions.js';
import { claimAndStart } from '../../scheduler/claim-start.js';
import { INLINE_KINDS } from '../../scheduler/dispatch-loop.js';
import { foldReleases } from './released.js';

const done = (runId: string): Finished => ({
  tenant: 'default',
  runId,
  event: { type: 'succeed' },
  extras: { outputs: { summary: 'ok', exitCode: 0 }, usage: { costUsd: 0.25 } },
});

describe('released counters', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  async function running(n: number): Promise<string[]> {
    t = await testCore({ scheduler: { enabled: false } });
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { run } = await t.core.services.runs.create(t.admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message: `m${i}` } },
      });
      ids.push(run.id);
    }
    expect(await claimAndStart(t.core.internals.deps.db, n, new Date(), INLINE_KINDS)).toHaveLength(n);
    return ids;
  }

  const counters = async () => {
    const db = t.core.internals.deps.db;
    const pick = async (
      table: 'adm_envelopes' | 'adm_envelopes_now',
      ten: 'adm_tenants' | 'adm_tenants_now',
    ) => ({
      env: await db
        .selectFrom(table)
        .select(['in_flight', 'spent_usd', 'spent_runs'])
        .executeTakeFirstOrThrow(),
      ten: await db.selectFrom(ten).select(['running', 'queued']).executeTakeFirstOrThrow(),
    });
    return {
      main: await pick('adm_envelopes', 'adm_tenants'),
      now: await pick('adm_envelopes_now', 'adm_tenants_now'),
    };
  };

  it('a settle leaves the envelope and tenant rows alone; the views subtract; a fold changes nothing they show', async () => {
    const ids = await running(3);
    const deps = t.core.internals.deps;
    expect(await settleMany(deps.db, deps, ids.slice(0, 2).map(done))).toHaveLength(2);
    const settled = await counters();
    // The main rows are as the creates and the claim left them: 3 in flight, 3 running.
    expect(settled.main).toEqual({
      env: { in_flight: 3, spent_usd: 0, spent_runs: 3 },
      ten: { running: 3, queued: 0 },
    });
    expect(settled.now).toEqual({
      env: { in_flight: 1, spent_usd: 0.5, spent_runs: 3 },
      ten: { running: 1, queued: 0 },
    });
    // Below the threshold nothing is folded; at 0 every released sum goes back into its main row.
    expect(await foldReleases(deps.db)).toBe(0);
    expect(await foldReleases(deps.db, 0)).toBe(2);
    const folded = await counters();
    expect(folded.now).toEqual(settled.now);
    expect(folded.main).toEqual(settled.now);
    const rel = await sql<{
      n: number;
    }>`SELECT (SELECT COALESCE(sum(in_flight), 0) FROM adm_envelope_releases)::int
      + (SELECT COALESCE(sum(running), 0) FROM adm_tenant_releases)::int AS n`.execute(deps.db);
    expect(rel.rows[0]?.n).toBe(0);
    // And the last run settles on top of the fold.
    expect(await settleMany(deps.db, deps, [done(ids[2]!)])).toHaveLength(1);
    expect((await counters()).now).toEqual({
      env: { in_flight: 0, spent_usd: 0.75, spent_runs: 3 },
      ten: { running: 0, queued: 0 },
    });
  });

  it.runIf(LIVE_PG)(
    'an uncommitted settle holds no envelope or tenant row: a create and a claim go through',
    async () => {
      const ids = await running(1);
      const deps = t.core.internals.deps;
      await deps.db.transaction().execute(async (tx) => {
        expect(await settleMany(tx, deps, [done(ids[0]!)])).toHaveLength(1);
        // Another connection locks both hot rows without waiting (NOWAIT would fail with 55P03 if held).
        const other = await deps.db.connection().execute(async (c) =>
          c.transaction().execute(async (o) => {
            await sql`SELECT 1 FROM adm_envelopes FOR UPDATE NOWAIT`.execute(o);
            await sql`SELECT 1 FROM adm_tenants FOR UPDATE NOWAIT`.execute(o);
            return 'free';
          }),
        );
        expect(other).toBe('free');
        // A create commits meanwhile, and a claim starts it.
        await t.core.services.runs.create(t.admin, { kind: 'analysis', subject: { config: { fn: 'echo' } } });
        expect(await claimAndStart(deps.db, 4, new Date(), INLINE_KINDS)).toHaveLength(1);
      });
      expect((await counters()).now.ten).toEqual({ running: 1, queued: 0 });
    },
  );
});
