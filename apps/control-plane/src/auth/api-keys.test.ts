// Keys and tenants through the HTTP API on the real core (PGlite): a revoke is idempotent and keeps the time
// of the first revocation; concurrent creates of one tenant admit exactly one (the rest are 409 and mint no
// key); a refused create changes nothing.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { generateApiKey } from './secrets.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const count = async (query: ReturnType<typeof sql<{ n: string }>>) =>
  Number((await query.execute(t.core.internals.deps.db)).rows[0]?.n);

describe('the shape of a key', () => {
  it('a minted key and a generated bootstrap key share one shape: evk_ and 43 base64url characters', async () => {
    const shape = /^evk_[A-Za-z0-9_-]{43}$/;
    const made = await call(t.app, 'POST', '/api-keys', { body: { role: 'member' } });
    expect(made.status).toBe(201);
    expect(String(made.body.key)).toMatch(shape);
    expect(generateApiKey()).toMatch(shape); // what main.ts installs as tenant default's first admin key
    expect(generateApiKey()).not.toBe(generateApiKey());
  });
});

describe('POST /api-keys/:id/revoke', () => {
  it('revoking twice keeps the first revocation time', async () => {
    const made = await call(t.app, 'POST', '/api-keys', { body: { role: 'member' } });
    const id = String(made.body.id);
    const first = await call(t.app, 'POST', `/api-keys/${id}/revoke`);
    expect(first.status).toBe(200);
    expect(first.body.revokedAt).toEqual(expect.any(String));
    await new Promise((r) => setTimeout(r, 5)); // the clock moves on
    const again = await call(t.app, 'POST', `/api-keys/${id}/revoke`);
    expect(again.status).toBe(200);
    expect(again.body.revokedAt).toBe(first.body.revokedAt);
    const listed = await call(t.app, 'GET', '/api-keys');
    const row = (listed.body.items as { id: string; revokedAt: string }[]).find((k) => k.id === id);
    expect(row?.revokedAt).toBe(first.body.revokedAt);
  });

  it("another tenant's key is a 404 and stays active", async () => {
    const acme = await t.tenant('acme-revoke');
    const theirs = await call(t.app, 'POST', '/api-keys', { key: acme, body: { role: 'member' } });
    const refused = await call(t.app, 'POST', `/api-keys/${String(theirs.body.id)}/revoke`);
    expect(refused.status).toBe(404);
    expect(refused.body.code).toBe('not_found');
    expect((await call(t.app, 'GET', '/runs', { key: String(theirs.body.key) })).status).toBe(200);
  });
});

describe('POST /tenants', () => {
  it('concurrent creates of one tenant: one 201, the others 409, one admin key', async () => {
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => call(t.app, 'POST', '/tenants', { body: { id: 'raced' } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409]);
    for (const a of answers.filter((x) => x.status === 409)) expect(a.body.code).toBe('conflict');
    expect(await count(sql`SELECT count(*) AS n FROM api_keys WHERE tenant_id = 'raced'`)).toBe(1);
  });

  it('a repeated create is a 409 that mints no key', async () => {
    expect((await call(t.app, 'POST', '/tenants', { body: { id: 'twice' } })).status).toBe(201);
    const again = await call(t.app, 'POST', '/tenants', { body: { id: 'twice', name: 'other' } });
    expect(again.status).toBe(409);
    expect(await count(sql`SELECT count(*) AS n FROM api_keys WHERE tenant_id = 'twice'`)).toBe(1);
    expect(await count(sql`SELECT count(*) AS n FROM tenants WHERE id = 'twice' AND name = 'twice'`)).toBe(1);
  });
});
