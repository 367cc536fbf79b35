// POST /runs with an `Idempotency-Key` header on the real core: the key is the create's requestId — a repeat
// returns the first run (decision `duplicate`) and saves nothing; a body naming another requestId is a 400; a
// key breaking requestId's rules (empty, too long, the reserved `auto:` prefix) is a 400 validation_failed.
// Every refusal leaves the runs table as it was.
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

type Created = { run: { id: string }; admission: { decision: string } };

describe('POST /runs with Idempotency-Key', () => {
  it('a repeated key returns the first run and creates nothing more; the body may repeat the same key', async () => {
    const key = await t.tenant('idem1');
    const headers = { 'idempotency-key': 'order-42' };
    const first = await call(t.app, 'POST', '/runs', { key, body: cmd, headers });
    expect(first.status).toBe(201);
    const again = await call(t.app, 'POST', '/runs', { key, body: cmd, headers });
    expect(again.status).toBe(201);
    const a = first.body as Created;
    const b = again.body as Created;
    expect(b.run.id).toBe(a.run.id);
    expect(b.admission.decision).toBe('duplicate');
    // The key and the body's requestId are one key: naming it in both is the same create.
    const both = await call(t.app, 'POST', '/runs', {
      key,
      body: { ...cmd, requestId: 'order-42' },
      headers,
    });
    expect((both.body as Created).run.id).toBe(a.run.id);
    // Another key is another run.
    const other = await call(t.app, 'POST', '/runs', {
      key,
      body: cmd,
      headers: { 'idempotency-key': 'order-43' },
    });
    expect((other.body as Created).run.id).not.toBe(a.run.id);
    expect(await runsOf('idem1')).toBe(2);
  });

  it('a body requestId other than the key is refused 400 bad_request; nothing is saved', async () => {
    const key = await t.tenant('idem2');
    const r = await call(t.app, 'POST', '/runs', {
      key,
      body: { ...cmd, requestId: 'body-id' },
      headers: { 'idempotency-key': 'header-id' },
    });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'bad_request' });
    expect(await runsOf('idem2')).toBe(0);
  });

  it('a key that breaks the requestId rules is a 400 validation_failed; nothing is saved', async () => {
    const key = await t.tenant('idem3');
    for (const bad of ['auto:run_x', 'k'.repeat(201)]) {
      const r = await call(t.app, 'POST', '/runs', { key, body: cmd, headers: { 'idempotency-key': bad } });
      expect([r.status, r.body.code]).toEqual([400, 'validation_failed']);
    }
    expect(await runsOf('idem3')).toBe(0);
  });
});
