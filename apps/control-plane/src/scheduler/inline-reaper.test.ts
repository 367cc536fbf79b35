// An inline run whose executor vanished (claimed, never settled) is failed with `executor_lost` once it has
// been running past the bound — through the ordinary settle path, so its record verifies and its tenant's
// counters are freed — and only once; a run still inside the bound is left alone.
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../test/core.js';
import { claimAndStart } from './claim-start.js';
import { INLINE_KINDS } from './dispatch-loop.js';
import { LOST_CODE, reapLostInline } from './inline-reaper.js';

let t: TestCore;
afterEach(async () => t.close());

const running = async () =>
  (
    await t.core.internals.deps.db
      .selectFrom('adm_tenants')
      .select('running')
      .where('tenant', '=', t.admin.tenantId)
      .executeTakeFirstOrThrow()
  ).running;

describe('inline reaper', () => {
  it('fails a run whose executor is gone, once, and leaves a fresh one running', async () => {
    t = await testCore({ scheduler: { enabled: false } });
    const deps = t.core.internals.deps;
    const echo = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'x' } } };
    const lost = (await t.core.services.runs.create(t.admin, echo)).run.id;
    // Claimed by an executor that then vanished: started, never settled.
    expect(
      (await claimAndStart(deps.db, 1, new Date(Date.now() + 5), INLINE_KINDS)).map((s) => s.runId),
    ).toEqual([lost]);
    expect(await running()).toBe(1);

    // Inside the bound: nothing to do.
    expect(await reapLostInline(deps, INLINE_KINDS, 300_000)).toEqual([]);

    // A second run, claimed now; the lost one's start moved ten minutes back.
    const fresh = (await t.core.services.runs.create(t.admin, echo)).run.id;
    await claimAndStart(deps.db, 1, new Date(Date.now() + 5), INLINE_KINDS);
    await deps.db
      .updateTable('adm_slots')
      .set({ started_at: Date.now() - 600_000 })
      .where('run_id', '=', lost)
      .execute();
    expect(await running()).toBe(2);
    expect(await reapLostInline(deps, INLINE_KINDS, 300_000)).toEqual([lost]);
    expect(await reapLostInline(deps, INLINE_KINDS, 300_000)).toEqual([]); // once

    const run = await t.core.services.runs.get(t.admin, lost);
    expect(run.status).toBe('failed');
    expect(run.error?.code).toBe(LOST_CODE);
    const record = await t.core.services.runs.record(t.admin, lost);
    expect(record.verify.ok).toBe(true);
    expect((await t.core.services.runs.get(t.admin, fresh)).status).toBe('running');
    expect(await running()).toBe(1); // the lost run's slot is freed; the fresh one still counts
  });
});
