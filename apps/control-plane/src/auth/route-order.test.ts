// Who may call before what they sent, swept over /openapi.json on the real core (PGlite):
// - a body the document declares `required` is required: none at all is a 400 `malformed_json` on every such
//   operation (never `{}` validated in its place: `POST /api-keys` with no body minted a member key);
// - every role-gated operation (admin; `POST /tenants`: the operator's admin) refuses a caller without the
//   role with 403 `forbidden` whatever the body and parameters — before validating them, so the refusal tells
//   nothing about the input's schema — and changes nothing.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, INTERNAL_TOKEN, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
let member: string;
let otherAdmin: string;
beforeAll(async () => {
  t = await testApp();
  member = await t.key('member');
  otherAdmin = await t.tenant('not-operator');
}, 300_000);
afterAll(async () => {
  await t?.close();
});

interface Operation {
  method: string;
  path: string;
  security?: Record<string, unknown>[];
  requestBody?: { required?: boolean; content: Record<string, unknown> };
  responses: Record<string, unknown>;
}

function operations(): Operation[] {
  const doc = t.document() as { paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>> };
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ ...op, method: method.toUpperCase(), path })),
  );
}
const name = (op: Operation) => `${op.method} ${op.path}`;
const scheme = (op: Operation) => Object.keys(op.security?.find((s) => Object.keys(s).length > 0) ?? {})[0];
/** Path parameters filled with `id` (the only parameter name the API uses in paths). */
const concrete = (path: string, id: string) => path.replace(/\{[^}]+\}/g, encodeURIComponent(id));

/** What the ledger holds of everything an admin route changes. */
async function ledger(): Promise<string> {
  const db = t.core.internals.deps.db;
  const q = async (s: ReturnType<typeof sql<Record<string, unknown>>>) =>
    JSON.stringify((await s.execute(db)).rows);
  return [
    await q(sql`SELECT id, revoked_at FROM api_keys ORDER BY id`),
    await q(sql`SELECT id FROM tenants ORDER BY id`),
    await q(sql`SELECT tenant, policy FROM adm_tenants ORDER BY tenant`),
    await q(sql`SELECT * FROM trajectory_policies ORDER BY 1`),
    await q(sql`SELECT id, state FROM runners ORDER BY id`),
  ].join('\n');
}

/**
 * Operations whose 403 depends on the resource, not on a role (the session's creator or an admin): a member
 * with a made-up id is a 400/404, as for anyone. Every other operation that declares a 403 is role-gated.
 */
const PER_RESOURCE = new Set([
  'GET /sandboxes/{id}',
  'POST /sandboxes/{id}/exec',
  'POST /sandboxes/{id}/touch',
  'POST /sandboxes/{id}/close',
  'POST /sandboxes/{id}/suspend',
  'POST /sandboxes/{id}/resume',
  'POST /runs/{id}/terminal-ticket',
  'GET /runs/{id}/input',
  'POST /runs/{id}/input',
]);
/** Role-gated to the operator (an admin of tenant `default`), not to any admin. */
const OPERATOR_ONLY = new Set(['POST /tenants']);

describe('a required body', () => {
  it('POST /api-keys with no body is 400 malformed_json and mints no key; `{}` is the documented defaults', async () => {
    const before = await ledger();
    const none = await call(t.app, 'POST', '/api-keys');
    expect(none.status, JSON.stringify(none.body)).toBe(400);
    expect(none.type).toContain('application/problem+json');
    expect(none.body.code).toBe('malformed_json');
    const empty = await call(t.app, 'POST', '/api-keys', { body: '' });
    expect([empty.status, empty.body.code]).toEqual([400, 'malformed_json']);
    expect(await ledger()).toBe(before);
    // A misspelt field is not a default: 400, nothing minted (as for a tenant).
    const misspelt = await call(t.app, 'POST', '/api-keys', { body: { rol: 'admin' } });
    expect([misspelt.status, misspelt.body.code]).toEqual([400, 'validation_failed']);
    const tenant = await call(t.app, 'POST', '/tenants', { body: { id: 'typo', nmae: 'Typo Inc' } });
    expect([tenant.status, tenant.body.code]).toEqual([400, 'validation_failed']);
    expect(await ledger()).toBe(before);
    const defaults = await call(t.app, 'POST', '/api-keys', { body: {} });
    expect(defaults.status).toBe(201);
    expect(defaults.body).toMatchObject({ role: 'member', label: '' });
  });

  it('every operation declaring a required body refuses none with 400 malformed_json', async () => {
    const swept = operations().filter((op) => op.requestBody?.required === true);
    expect(swept.length).toBeGreaterThan(20);
    const before = await ledger();
    const wrong: string[] = [];
    for (const op of swept) {
      const auth = scheme(op);
      if (auth === 'runnerCredential') continue; // no runner here: 401 before anything, as it should be
      const key = auth === 'internalToken' ? INTERNAL_TOKEN : auth === 'apiKey' ? undefined : null;
      const headers: Record<string, string> =
        auth === 'internalToken' ? { 'x-everdict-tenant': 'default' } : {};
      const res = await call(t.app, op.method, concrete(op.path, 'nothing_here'), { key, headers });
      if (res.status !== 400 || res.body.code !== 'malformed_json')
        wrong.push(`${name(op)} → ${res.status} ${String(res.body.code)}`);
    }
    expect(wrong).toEqual([]);
    expect(await ledger()).toBe(before);
  });
});

describe('authorization before validation', () => {
  const gated = () =>
    operations().filter(
      (op) => scheme(op) === 'apiKey' && '403' in op.responses && !PER_RESOURCE.has(name(op)),
    );

  it('the tables name operations the document has', () => {
    const all = new Set(operations().map(name));
    for (const n of [...PER_RESOURCE, ...OPERATOR_ONLY]) expect(all.has(n), n).toBe(true);
    expect(gated().map(name)).toEqual(expect.arrayContaining(['POST /tenants', 'PUT /trajectory-policy']));
  });

  it('a caller without the role gets 403 forbidden whatever it sends, and nothing changes', async () => {
    const before = await ledger();
    const wrong: string[] = [];
    for (const op of gated()) {
      const callers = OPERATOR_ONLY.has(name(op))
        ? { member, 'another tenant’s admin': otherAdmin }
        : { member };
      // Invalid every way the operation can be: an id past its bounds, a body no schema accepts, or none.
      const bodies: (string | undefined)[] = op.requestBody
        ? ['[]', '{"id": 7, "role": "root"}', undefined]
        : [undefined];
      for (const [who, key] of Object.entries(callers)) {
        for (const body of bodies) {
          const res = await call(t.app, op.method, concrete(op.path, 'x'.repeat(300)), {
            key,
            ...(body === undefined ? {} : { body }),
          });
          if (res.status !== 403 || res.body.code !== 'forbidden')
            wrong.push(
              `${name(op)} as ${who} with ${body ?? 'no body'} → ${res.status} ${String(res.body.code)}`,
            );
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(await ledger()).toBe(before);
  });

  it('without a key it is 401 first; with the role, the input is then validated (400)', async () => {
    const noKey = await call(t.app, 'POST', '/tenants', { key: null, body: '[]' });
    expect([noKey.status, noKey.body.code]).toEqual([401, 'unauthenticated']);
    const bad = await call(t.app, 'POST', '/tenants', { body: { id: 'Not An Id' } });
    expect([bad.status, bad.body.code]).toEqual([400, 'validation_failed']);
    const policy = await call(t.app, 'PUT', '/trajectory-policy', { body: { trajectoryRetentionDays: 'x' } });
    expect(policy.status).toBe(400);
  });
});
