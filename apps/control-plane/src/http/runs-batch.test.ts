// POST /runs:batch on the real core: one gate decision per spec in input order, a result per item (201 with
// the run, or the item's own refusal as a problem), refused items saving nothing; a malformed batch (none,
// more than 1,000, not an array) is a 400 that saves nothing at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_SPEC, call, runsOf as countRuns, type TestApp, testApp } from './testing/harness.js';

const cmd = COMMAND_SPEC;

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const runsOf = (tenant: string) => countRuns(t, tenant);

type Item = {
  status: number;
  run?: { id: string };
  admission?: { position: number | null };
  problem?: Record<string, unknown>;
};

describe('POST /runs:batch', () => {
  it('decides each spec in order: admitted, invalid, admitted, admitted, then the queue cap refuses', async () => {
    const key = await t.tenant('batch1', { maxQueued: 3 });
    const r = await call(t.app, 'POST', '/runs:batch', {
      key,
      body: { runs: [cmd, { kind: 42 }, cmd, cmd, cmd, 'not a spec'] },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const results = r.body.results as Item[];
    expect(results.map((x) => x.status)).toEqual([201, 400, 201, 201, 429, 400]);
    expect(results[1]?.problem?.code).toBe('validation_failed');
    expect(results[4]?.problem).toMatchObject({
      code: 'capacity_exceeded',
      rule: 'queue_depth',
      status: 429,
    });
    const positions = [0, 2, 3].map((i) => results[i]?.admission?.position ?? -1);
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    // Exactly the admitted items exist; the refused ones left nothing behind.
    expect(await runsOf('batch1')).toBe(3);
    const ids = [0, 2, 3].map((i) => results[i]?.run?.id);
    for (const id of ids) expect((await call(t.app, 'GET', `/runs/${id}`, { key })).status).toBe(200);
  });

  it('refuses more than 1,000 specs, none, or a non-array with a 400 that saves nothing', async () => {
    const key = await t.tenant('batch2');
    for (const body of [{ runs: Array.from({ length: 1001 }, () => 0) }, { runs: [] }, { runs: cmd }, {}]) {
      const r = await call(t.app, 'POST', '/runs:batch', { key, body });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    }
    expect(await runsOf('batch2')).toBe(0);
  });

  it('needs an API key, and is in the OpenAPI document', async () => {
    expect((await call(t.app, 'POST', '/runs:batch', { key: null, body: { runs: [cmd] } })).status).toBe(401);
    const doc = (await call(t.app, 'GET', '/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/runs:batch');
  });
});
