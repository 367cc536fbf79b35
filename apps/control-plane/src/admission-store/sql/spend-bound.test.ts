// Spend is kept to admission's MAX_USD on every row a settle or a fold writes (budget.ts `boundedUsd`): the
// kernel counts any spend past MAX_USD as MAX_USD, so saturating there changes no decision, and no number of
// settles can push a float8 sum past ~1.8e308 — an overflow (SQLSTATE 22003) is a settle, fold or read that can
// never succeed again, every run of its batch left running and the envelope unreadable for admission. One
// pooled connection, so every settle writes one released stripe (on PGlite and on a live PostgreSQL alike).

import { exhaustion, MAX_USD, rootEnvelopeId, tenantPolicy } from '@everdict/admission';
import { MAX_USAGE_USD } from '@everdict/run-model';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../../test/core.js';
import { type Finished, settleMany } from '../../scheduler/batch-transitions.js';
import { claimAndStart } from '../../scheduler/claim-start.js';
import { INLINE_KINDS } from '../../scheduler/dispatch-loop.js';
import { foldReleases } from './released.js';
import { envelopeOf } from './rows.js';
import { PgAdmissionStore } from './store.js';

const maxCost = (runId: string): Finished => ({
  tenant: 'default',
  runId,
  event: { type: 'succeed' },
  extras: { outputs: { summary: 'ok', exitCode: 0 }, usage: { costUsd: MAX_USAGE_USD } },
});

describe('spend bound', () => {
  let t: TestCore;
  afterEach(async () => t.close());

  /** `n` running runs of a tenant whose budget is 5 USD. */
  async function running(n: number): Promise<string[]> {
    t = await testCore({ scheduler: { enabled: false }, poolSize: 1 });
    const db = t.core.internals.deps.db;
    await new PgAdmissionStore(db).putTenant(
      t.admin.tenantId,
      tenantPolicy({ maxQueued: 50, maxConcurrent: 50, budget: { usd: 5 } }),
    );
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { run } = await t.core.services.runs.create(t.admin, {
        kind: 'analysis',
        subject: { config: { fn: 'echo', message: `m${i}` } },
      });
      ids.push(run.id);
    }
    expect(await claimAndStart(db, n, new Date(), INLINE_KINDS)).toHaveLength(n);
    return ids;
  }

  const spent = async () => {
    const db = t.core.internals.deps.db;
    const stripes = await db.selectFrom('adm_envelope_releases').select('spent_usd').execute();
    const main = await db.selectFrom('adm_envelopes').select('spent_usd').executeTakeFirstOrThrow();
    const now = await db.selectFrom('adm_envelopes_now').selectAll().executeTakeFirstOrThrow();
    return { stripes: stripes.map((r) => r.spent_usd), main: main.spent_usd, now };
  };

  /** The next create is 402 by SQL's guard, as the kernel decides on the envelope the ledger reads. */
  async function refusesAsTheKernel(): Promise<void> {
    const { now } = await spent();
    expect(exhaustion([envelopeOf(now)])).toEqual({ envelopeId: now.id, resource: 'usd' });
    await expect(
      t.core.services.runs.create(t.admin, { kind: 'analysis', subject: { config: { fn: 'echo' } } }),
    ).rejects.toMatchObject({ code: 'envelope_exhausted' });
  }

  it('settles of max-cost runs, batched and alone, saturate every spend row at MAX_USD; a fold too', async () => {
    const ids = await running(4);
    const deps = t.core.internals.deps;
    expect(await settleMany(deps.db, deps, ids.slice(0, 3).map(maxCost))).toHaveLength(3);
    expect(await settleMany(deps.db, deps, [maxCost(ids[3]!)])).toHaveLength(1);
    const settled = await spent();
    expect(settled.stripes).toEqual([MAX_USD]);
    expect(settled.now.spent_usd).toBe(MAX_USD);
    expect(await foldReleases(deps.db, 0)).toBe(2); // the envelope's and the tenant's released rows
    const folded = await spent();
    expect(folded.main).toBe(MAX_USD);
    expect(folded.now.spent_usd).toBe(MAX_USD);
    await refusesAsTheKernel();
  });

  it('a settle onto a released row whose spend reached the float8 limit commits, and admission still answers 402', async () => {
    const [x] = await running(1);
    const deps = t.core.internals.deps;
    // The stripe as ≈ 1.8e8 settles of MAX_USAGE_USD on this connection left it while spend was unbounded.
    await sql`INSERT INTO adm_envelope_releases (tenant, id, stripe, spent_usd)
      VALUES (${t.admin.tenantId}, ${rootEnvelopeId(t.admin.tenantId)}, (pg_backend_pid() % 8)::smallint,
        ${Number.MAX_VALUE}::float8)
      ON CONFLICT (tenant, id, stripe) DO UPDATE SET spent_usd = EXCLUDED.spent_usd`.execute(deps.db);
    expect(await settleMany(deps.db, deps, [maxCost(x!)])).toEqual([x]);
    expect((await t.core.services.runs.get(t.admin, x!)).status).toBe('succeeded');
    const after = await spent();
    expect(after.stripes).toEqual([MAX_USD]);
    expect(after.now).toMatchObject({ spent_usd: MAX_USD, in_flight: 0 });
    await refusesAsTheKernel();
  });
});
