// Migration 0030 on a core whose runs lost leases before `lost_attempts` existed: a run not yet terminal gets
// its count from its `run.requeued` facts (one per lost execution), so the upgrade grants it no extra try; a
// run with none keeps 0.
import { Migrator } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../../test/core.js';
import { leasePolicy, sweepExpiredLeases } from '../../leases/index.js';
import { claimAndStart } from '../../scheduler/claim-start.js';
import { INLINE_KINDS } from '../../scheduler/dispatch-loop.js';
import { migrateToLatest } from '../database.js';
import { migrationProvider } from './index.js';

let t: TestCore;
afterEach(async () => t.close());

describe('migration 0030 (lost attempts)', { timeout: 120_000 }, () => {
  it('counts the requeues of the runs not yet settled', async () => {
    let clockMs = Date.now();
    t = await testCore({ scheduler: { enabled: false }, clock: () => new Date(clockMs) });
    const deps = t.core.internals.deps;
    const echo = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'x' } } };
    const lost = (await t.core.services.runs.create(t.admin, echo)).run.id;
    const policy = leasePolicy({ maxAttempts: 5 });
    for (let i = 0; i < 2; i++) {
      clockMs += 5;
      const started = await claimAndStart(deps.db, 1, new Date(clockMs), INLINE_KINDS, {
        holder: 'a',
        leaseMs: 1_000,
      });
      expect(started.map((s) => s.runId)).toEqual([lost]);
      clockMs += 1_001;
      expect((await sweepExpiredLeases(deps, policy, clockMs)).requeued).toEqual([lost]);
    }
    // Created after the losses: a requeued run re-enters behind its tenant's queued runs (leases/requeue-order.ts).
    const fresh = (await t.core.services.runs.create(t.admin, echo)).run.id;
    const counts = async () =>
      (
        await deps.db
          .selectFrom('runs')
          .select(['id', 'lost_attempts', 'attempt'])
          .where('id', 'in', [lost, fresh])
          .execute()
      )
        .map((r) => [r.id, r.lost_attempts, r.attempt])
        .sort();
    const expected = [
      [lost, 2, 2],
      [fresh, 0, 0],
    ].sort();
    expect(await counts()).toEqual(expected);
    // Back to before 0030 (its column gone), then up again through the migrator.
    const migrator = new Migrator({ db: deps.db, provider: migrationProvider });
    const down = await migrator.migrateTo('0029_agent_turn_declines');
    expect(down.error).toBeUndefined();
    expect(down.results?.map((r) => r.migrationName)).toContain('0030_lost_attempts');
    expect(await migrateToLatest(deps.db)).toContain('0030_lost_attempts');
    expect(await counts()).toEqual(expected);
  });
});
