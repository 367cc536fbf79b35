// Two replicas combining creates against ONE tenant's caps on a live PostgreSQL: never over-admitted.
// Command runs stay queued (no driver), so the queue cap and the root in-flight cap are exact end states.
import { tenantPolicy } from '@everdict/admission';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgAdmissionStore } from '../src/admission-store/sql/store.js';
import { type Core, startCore } from '../src/core.js';
import { ControlPlaneError } from '../src/errors.js';
import type { Principal } from '../src/services/index.js';
import { OFFLINE_RUNNER } from './core.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';

announceSkippedLiveSuite('test/combiner.pg.test.ts');
const KEY = 'evk_combiner_test_key_0000000000000';
const cmd = { kind: 'command', subject: { path: 'a', image: 'i', command: ['x'] } };

describe.runIf(LIVE_PG)('two replicas combining creates on one PostgreSQL', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;
  let pa: Principal;
  let pb: Principal;

  beforeAll(async () => {
    live = await createLiveDatabase();
    const opts = {
      databaseUrl: live.url,
      bootstrapKey: KEY,
      executors: [OFFLINE_RUNNER],
      scheduler: { pollMs: 100 },
    };
    a = await startCore(opts);
    b = await startCore(opts);
    pa = await a.services.auth.authenticate(KEY);
    pb = await b.services.auth.authenticate(KEY);
  }, 60_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
  });

  for (const [name, policy, cap] of [
    ['queue cap', { maxQueued: 37 }, 37],
    ['root in-flight cap', { maxQueued: 10_000, inFlightCap: 23 }, 23],
  ] as const) {
    it(`never over-admits past the ${name} (${cap}) with 2 × 16 concurrent creators`, async () => {
      const db = a.internals.deps.db;
      await db.deleteFrom('adm_queue').execute();
      await db
        .updateTable('adm_tenants')
        .set({ queued: 0, queued_batch: 0, queued_background: 0, queued_interactive: 0 })
        .execute();
      await db.updateTable('adm_envelopes').set({ in_flight: 0, spent_runs: 0 }).execute();
      await db.deleteFrom('adm_envelope_releases').execute(); // the released counters are reset with them
      await db.deleteFrom('adm_tenant_releases').execute();
      await new PgAdmissionStore(db).putTenant(pa.tenantId, tenantPolicy(policy));
      let next = 0;
      let admitted = 0;
      let refused = 0;
      const worker = async (w: number) => {
        while (next < 200) {
          next++;
          const [core, p] = w % 2 === 0 ? [a, pa] : [b, pb];
          try {
            await core.services.runs.create(p, cmd);
            admitted++;
          } catch (e) {
            expect(e).toBeInstanceOf(ControlPlaneError);
            expect((e as ControlPlaneError).httpStatus).toBe(429);
            refused++;
          }
        }
      };
      await Promise.all(Array.from({ length: 32 }, (_, w) => worker(w)));
      expect(admitted).toBe(cap);
      expect(refused).toBe(200 - cap);
      const ten = await db
        .selectFrom('adm_tenants')
        .select('queued')
        .where('tenant', '=', pa.tenantId)
        .executeTakeFirstOrThrow();
      expect(ten.queued).toBe(cap);
      const q = await db.selectFrom('adm_queue').select(db.fn.countAll().as('n')).executeTakeFirstOrThrow();
      expect(Number(q.n)).toBe(cap);
    }, 60_000);
  }
});
