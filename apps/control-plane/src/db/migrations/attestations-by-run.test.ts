// Migration 0033: a run's attestation bodies are read by run id through an index (`attestations_run`), not by
// a scan of every run's attestations — the shape of readRecord's bundle (ledger/records.ts `bundleOf`).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestCore, testCore } from '../../../test/core.js';

let t: TestCore;
beforeAll(async () => {
  t = await testCore({ scheduler: { enabled: false } });
}, 120_000);
afterAll(async () => t?.close());

describe('migration 0033 (attestations by run)', { timeout: 120_000 }, () => {
  it("reads one run's attestations by the index on a ledger of many runs", async () => {
    const db = t.core.internals.deps.db;
    await sql`INSERT INTO attestations (address, tenant_id, run_id, body, created_at)
      SELECT 'addr-' || g, 'default', 'run-' || (g / 2), '{}'::jsonb, now()
      FROM generate_series(1, 20000) AS g`.execute(db);
    await sql`ANALYZE attestations`.execute(db);
    const plan = await sql<{ 'QUERY PLAN': string }>`EXPLAIN SELECT address, body FROM attestations
      WHERE run_id = ${'run-4321'} ORDER BY created_at`.execute(db);
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain('attestations_run');
    expect(text).not.toMatch(/Seq Scan on attestations/);
  });
});
