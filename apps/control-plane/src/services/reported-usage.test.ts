// Every reported usage is bounded where it enters the ledger (transitionTx, run-model's ReportedUsage): a cost
// past MAX_USAGE_USD (admission's MAX_USD) — from an agent's report or a runner's completion — is a 400
// `out_of_range` that changes nothing: the run keeps running and no envelope is charged. Before, it was taken;
// the envelope's float8 spend then overflowed at a later settle (SQLSTATE 22003: that run could never finish).
import { MAX_USD } from '@everdict/admission';
import { MAX_USAGE_USD } from '@everdict/run-model';
import { encodeAttestationBody } from '@everdict/runrecord';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';
import { leaseRuns, pairTestRunner, signTestInterval } from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [] });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const internal = { key: INTERNAL_TOKEN, headers: { 'x-everdict-tenant': 'default' } };
const HUGE = 1e308; // finite, JSON-encodable; two of them overflow a float8 sum

/** The tenant root envelope's spend, as admission sums it. */
async function rootSpent() {
  const { rows } = await sql<{ spent_usd: number; spent_tokens: number }>`
    SELECT spent_usd, spent_tokens FROM adm_envelopes_now WHERE tenant = 'default' AND parent_id IS NULL`.execute(
    t.core.internals.deps.db,
  );
  return { usd: Number(rows[0]?.spent_usd), tokens: Number(rows[0]?.spent_tokens) };
}

const statusOf = async (id: string) => (await call(t.app, 'GET', `/runs/${id}`)).body.status;

describe('a reported cost is bounded by MAX_USAGE_USD', () => {
  it('is admission’s MAX_USD', () => {
    expect(MAX_USAGE_USD).toBe(MAX_USD);
  });

  it('a runner completion past it is 400 out_of_range, the run running and nothing charged', async () => {
    const runner = await pairTestRunner(t.app, { name: 'spender' });
    const created = await call(t.app, 'POST', '/runs', {
      key: ADMIN_KEY,
      body: { kind: 'command', subject: { command: ['true'] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const [lease] = await leaseRuns(t.app, runner, 1);
    if (!lease) throw new Error('no lease');
    const complete = (usage: Record<string, number>) =>
      call(t.app, 'POST', `/runner/v1/runs/${lease.runId}/complete`, {
        key: runner.credential,
        body: {
          epoch: lease.epoch,
          outputs: {},
          usage,
          attestation: encodeAttestationBody(signTestInterval(lease, runner.key.secretKey).body),
        },
      });
    const before = await rootSpent();
    const refusals: Record<string, number>[] = [
      { costUsd: HUGE },
      { inputTokens: HUGE },
      { costUsd: 1, cpuTimeMs: -1 },
    ];
    for (const usage of refusals) {
      const refused = await complete(usage);
      expect(refused.status, JSON.stringify(refused.body)).toBe(400);
      expect(refused.body.code, JSON.stringify(usage)).toBe('out_of_range');
      expect(await statusOf(lease.runId)).toBe('running');
    }
    expect(await rootSpent()).toEqual(before);
    // Within bounds (with a runner's own measure): settled and charged.
    const done = await complete({ costUsd: 0.5, cpuTimeMs: 12 });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(await statusOf(lease.runId)).toBe('succeeded');
    expect((await rootSpent()).usd - before.usd).toBeCloseTo(0.5, 9);
  });

  it('an agent report past it is 400 out_of_range, the run running and nothing charged', async () => {
    const opened = async () => {
      const r = await call(t.app, 'POST', '/internal/agent-run-events', {
        ...internal,
        body: { event: 'started', agent: { agentId: 'spender' } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return String(r.body.id);
    };
    const a = await opened();
    const b = await opened();
    const before = await rootSpent();
    for (const id of [a, b]) {
      const r = await call(t.app, 'POST', '/internal/agent-run-events', {
        ...internal,
        body: { runId: id, event: 'succeeded', usage: { costUsd: HUGE } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.code).toBe('out_of_range');
      expect(await statusOf(id)).toBe('running');
    }
    expect(await rootSpent()).toEqual(before);
    // At the bound: taken and charged; both runs settle.
    for (const id of [a, b]) {
      const r = await call(t.app, 'POST', '/internal/agent-run-events', {
        ...internal,
        body: { runId: id, event: 'succeeded', usage: { costUsd: MAX_USAGE_USD, inputTokens: 3 } },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.status).toBe('succeeded');
    }
    const after = await rootSpent();
    // Two costs at the bound: the envelope's spend saturates at admission's MAX_USD (admission-store/sql/budget.ts
    // `boundedUsd`), the most any spend counts for — never past it, never Infinity.
    expect(MAX_USAGE_USD).toBe(MAX_USD);
    expect(after.usd).toBe(MAX_USD);
    expect(Number.isFinite(after.usd)).toBe(true);
    expect(after.tokens - before.tokens).toBe(6);
  });
});
