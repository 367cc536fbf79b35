// The HTTP edge on the real core: auth, problem+json for every refusal, limits, headers, draining, docs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVE_PG } from '../../test/db.js';
import { buildApp } from '../app.js';
import { REFUSALS } from '../errors.js';
import { Lifecycle } from './lifecycle.js';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from './testing/harness.js';

const PROBLEM = 'application/problem+json';
const spec = { kind: 'analysis', subject: { config: { q: 1 } } };

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ maxBodyBytes: 2048 });
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

describe('auth', () => {
  it('401 problem without a key, with a challenge', async () => {
    const r = await call(t.app, 'GET', '/runs', { key: null });
    expect(r.status).toBe(401);
    expect(r.type).toBe(PROBLEM);
    expect(r.body.code).toBe('unauthenticated');
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('401 problem for an unknown key (the core refuses it)', async () => {
    const r = await call(t.app, 'GET', '/runs', { key: 'evd_nope_nope_nope_nope' });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('unauthorized');
    expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('members cannot manage keys (403); admins can, and a new key is shown once, never cached', async () => {
    const created = await call(t.app, 'POST', '/api-keys', { body: { role: 'member', label: 'ci' } });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const memberKey = String(created.body.key);
    const listed = await call(t.app, 'GET', '/api-keys');
    expect(JSON.stringify(listed.body)).not.toContain(memberKey);
    const denied = await call(t.app, 'POST', '/api-keys', { key: memberKey, body: { role: 'admin' } });
    expect(denied.status).toBe(403);
    expect(denied.type).toBe(PROBLEM);
    expect((await call(t.app, 'POST', '/runs', { key: memberKey, body: spec })).status).toBe(201);
  });

  it("another tenant's run is a 404, never a 403; the new tenant's key is never cached", async () => {
    const tenant = await call(t.app, 'POST', '/tenants', { body: { id: 'acme' } });
    expect(tenant.status).toBe(201);
    expect(tenant.headers.get('cache-control')).toBe('no-store');
    const acmeKey = String((tenant.body.key as { key: string }).key);
    const mine = await call(t.app, 'POST', '/runs', { body: spec });
    const runId = (mine.body.run as { id: string }).id;
    for (const [method, path] of [
      ['GET', `/runs/${runId}`],
      ['POST', `/runs/${runId}/cancel`],
      ['GET', `/runs/${runId}/record`],
      ['GET', `/runs/${runId}/events`],
    ] as const) {
      const r = await call(t.app, method, path, { key: acmeKey });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.code).toBe('not_found');
    }
    expect((await call(t.app, 'GET', '/runs', { key: acmeKey })).body.items).toEqual([]);
  });

  it('internal endpoints take the service token only (constant-time compare)', async () => {
    const body = { event: 'started', agent: { agentId: 'a1' } };
    const headers = { 'x-everdict-tenant': 'default' };
    expect((await call(t.app, 'POST', '/internal/agent-run-events', { body, headers })).status).toBe(401);
    const wrong = await call(t.app, 'POST', '/internal/agent-run-events', {
      key: `${INTERNAL_TOKEN}x`,
      body,
      headers,
    });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('invalid_service_token');
    const ok = await call(t.app, 'POST', '/internal/agent-run-events', {
      key: INTERNAL_TOKEN,
      body,
      headers,
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.kind).toBe('agent');
    const runId = String(ok.body.id);
    const done = await call(t.app, 'POST', '/internal/agent-run-events', {
      key: INTERNAL_TOKEN,
      body: { runId, event: 'succeeded' },
      headers,
    });
    expect(done.body.status).toBe('succeeded');
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.status).toBe('succeeded');
  });

  it('internal endpoints refuse everything when no token is configured', async () => {
    const { app } = buildApp({ services: t.core.services, health: () => t.core.health() });
    const r = await call(app, 'POST', '/internal/agent-run-events', {
      key: 'anything-at-all-0123456789',
      body: { event: 'started' },
      headers: { 'x-everdict-tenant': 'default' },
    });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('internal_disabled');
  });
});

describe('problems for bad input — never a 500', () => {
  it('malformed JSON → 400 malformed_json', async () => {
    const r = await call(t.app, 'POST', '/runs', { body: '{"kind": "analysis",' });
    expect(r.status).toBe(400);
    expect(r.type).toBe(PROBLEM);
    expect(r.body.code).toBe('malformed_json');
  });

  it('wrong content-type → 415', async () => {
    const r = await call(t.app, 'POST', '/runs', {
      body: 'kind=analysis',
      headers: { 'content-type': 'text/plain' },
    });
    expect(r.status).toBe(415);
    expect(r.body.code).toBe('unsupported_media_type');
    const none = await t.app.request('/runs', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      body: 'x',
    });
    expect(none.status).toBe(415);
  });

  it('a body past the limit → 413, whether declared or streamed', async () => {
    const big = JSON.stringify({ ...spec, subject: { pad: 'x'.repeat(5000) } });
    const r = await call(t.app, 'POST', '/runs', { body: big });
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('body_too_large');
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(big));
        c.close();
      },
    });
    const streamed = await t.app.request('/runs', {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
  });

  it('schema violations → 400 validation_failed with zod issues', async () => {
    const r = await call(t.app, 'POST', '/runs', { body: { kind: 'Not A Kind', lifetime: 'forever' } });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('validation_failed');
    const issues = r.body.issues as { path: unknown[] }[];
    expect(issues.map((i) => i.path[0]).sort()).toEqual(['kind', 'lifetime']);
    const q = await call(t.app, 'GET', '/runs?limit=0&status=nope');
    expect(q.status).toBe(400);
    expect(q.body.code).toBe('validation_failed');
  });

  it('NUL characters (which PostgreSQL cannot store) → 400 nul_character', async () => {
    const body = await call(t.app, 'POST', '/runs', { body: '{"kind":"analysis","requestId":"a\\u0000b"}' });
    expect(body.status).toBe(400);
    expect(body.body.code).toBe('nul_character');
    expect((await call(t.app, 'GET', '/runs/run%00x')).body.code).toBe('nul_character');
    expect((await call(t.app, 'GET', '/runs?cursor=%00')).body.code).toBe('nul_character');
  });

  it('unknown routes and methods → 404 problem', async () => {
    for (const [m, p] of [
      ['GET', '/nope'],
      ['DELETE', '/runs'],
      ['GET', '/runs/x/y/z'],
      ['PUT', '/healthz'],
    ] as const) {
      const r = await call(t.app, m, p);
      expect(r.status, `${m} ${p}`).toBe(404);
      expect(r.type).toBe(PROBLEM);
      expect(r.body.code).toBe('route_not_found');
    }
  });

  it('an error no input can cause → 500 problem without a stack', async () => {
    const services = {
      ...t.core.services,
      runs: {
        ...t.core.services.runs,
        list: async () => {
          throw new Error('secret internals at /srv/app.ts:12');
        },
      },
    };
    const { app } = buildApp({ services, health: () => t.core.health() });
    const r = await call(app, 'GET', '/runs');
    expect(r.status).toBe(500);
    expect(r.body.code).toBe('internal');
    expect(JSON.stringify(r.body)).not.toMatch(/secret|app\.ts|at /);
  });
});

describe('headers', () => {
  it('every response carries X-Content-Type-Options: nosniff (successes, refusals, 404s, docs)', async () => {
    for (const [m, p, key] of [
      ['GET', '/healthz', null],
      ['GET', '/metrics', null],
      ['GET', '/openapi.json', null],
      ['GET', '/runs', ADMIN_KEY],
      ['GET', '/runs', null],
      ['GET', '/nope', null],
      ['POST', '/runs', ADMIN_KEY],
    ] as const) {
      const r = await call(t.app, m, p, { key, ...(m === 'POST' ? { body: '{' } : {}) });
      expect(r.headers.get('x-content-type-options'), `${m} ${p} → ${r.status}`).toBe('nosniff');
      expect(r.headers.get('x-request-id'), `${m} ${p} → ${r.status}`).toMatch(/^[\w.:-]{1,128}$/);
    }
  });

  it('a request id sent is the one answered, on a created run and on a refusal alike', async () => {
    const created = await call(t.app, 'POST', '/runs', {
      body: spec,
      headers: { 'x-request-id': 'req-1.a:b' },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('x-request-id')).toBe('req-1.a:b');
    expect(created.headers.get('x-content-type-options')).toBe('nosniff');
    expect(created.type).toMatch(/^application\/json/);
    const refused = await call(t.app, 'POST', '/runs', { body: '{', headers: { 'x-request-id': 'req-2' } });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('x-request-id')).toBe('req-2');
    const invalid = await call(t.app, 'GET', '/runs', { headers: { 'x-request-id': 'not valid!' } });
    expect(invalid.headers.get('x-request-id')).not.toBe('not valid!');
  });

  it('a problem names a code of the one vocabulary with its status', async () => {
    const r = await call(t.app, 'GET', '/runs/run_nope');
    expect(r.body).toMatchObject({ code: 'not_found', status: REFUSALS.not_found.status });
  });
});

describe('system routes', () => {
  it('healthz, metrics and the OpenAPI document', async () => {
    const h = await call(t.app, 'GET', '/healthz', { key: null });
    expect(h.status).toBe(200);
    expect(h.body).toMatchObject({ status: 'ok', database: LIVE_PG ? 'postgres' : 'pglite' });
    const m = await t.app.request('/metrics');
    expect(m.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await m.text();
    for (const name of [
      'everdict_queue_depth',
      'everdict_admissions_total',
      'everdict_dispatch_latency_seconds',
    ]) {
      expect(text).toContain(name);
    }
    const doc = await call(t.app, 'GET', '/openapi.json', { key: null });
    expect(doc.status).toBe(200);
    const paths = Object.keys(doc.body.paths as object).sort();
    expect(paths).toEqual(
      [
        // agents (src/agents/)
        '/agents',
        '/agents/hosts',
        '/agents/hosts/pair',
        '/agents/hosts/{id}/revoke',
        '/agents/{id}',
        '/conversations',
        '/conversations/{id}/messages',
        '/internal/agent/v1/heartbeat',
        '/internal/agent/v1/leases',
        '/internal/agent/v1/runs/{id}/calls',
        '/internal/agent/v1/runs/{id}/decline',
        '/internal/agent/v1/runs/{id}/read',
        '/internal/agent/v1/runs/{id}/resolutions',
        '/internal/agent/v1/runs/{id}/transcript',
        '/runs/{id}/input',
        '/api-keys',
        '/api-keys/{id}/revoke',
        '/groups',
        '/groups/{id}',
        '/groups/{id}/cancel',
        '/groups/{id}/promote',
        '/groups/{id}/score',
        '/harnesses',
        '/healthz',
        '/internal/agent-run-events',
        '/internal/agents/hosts',
        '/internal/agents/hosts/{id}/revoke',
        '/internal/runners',
        '/internal/runners/pairing-tokens',
        '/internal/runners/{id}/drain',
        '/internal/runners/{id}/revoke',
        '/keys',
        '/metrics',
        '/runner/v1/completions',
        '/runner/v1/heartbeat',
        '/runner/v1/leases',
        '/runner/v1/runs/{id}/artifacts',
        '/runner/v1/runs/{id}/artifacts:batch',
        '/runner/v1/runs/{id}/complete',
        '/runner/v1/runs/{id}/events',
        '/runners',
        '/runners/pair',
        '/runners/pairing-tokens',
        '/runners/{id}/drain',
        '/runners/{id}/revoke',
        '/runs',
        '/runs/{id}',
        '/runs/{id}/artifact',
        '/runs/{id}/artifacts.tar',
        '/runs/{id}/cancel',
        '/runs/{id}/events',
        '/runs/{id}/record',
        '/runs/{id}/scores',
        '/runs/{id}/terminal',
        '/runs/{id}/terminal-ticket',
        '/runs/{id}/trajectory',
        '/runs/{id}/trajectory/stream',
        '/runs:batch',
        '/sandboxes',
        '/sandboxes/{id}',
        '/sandboxes/{id}/close',
        '/sandboxes/{id}/exec',
        '/sandboxes/{id}/resume',
        '/sandboxes/{id}/suspend',
        '/sandboxes/{id}/touch',
        '/subscriptions',
        '/subscriptions/{id}',
        '/subscriptions/{id}/firings',
        '/tenant/policy',
        '/tenant/queue',
        '/envelopes',
        '/tenants',
        '/trajectories',
        '/trajectories/{id}',
        '/trajectories/{id}/score',
        '/trajectory-deletions',
        '/trajectory-policy',
        '/v1/traces',
      ].sort(),
    );
  });

  it('draining: writes → 503 problem, reads still answer, healthz → 503', async () => {
    const lifecycle = new Lifecycle();
    const { app } = buildApp({ services: t.core.services, health: () => t.core.health(), lifecycle });
    await lifecycle.drain(100);
    const w = await call(app, 'POST', '/runs', { body: spec });
    expect(w.status).toBe(503);
    expect(w.body.code).toBe('shutting_down');
    expect((await call(app, 'GET', '/runs')).status).toBe(200);
    expect((await call(app, 'GET', '/healthz', { key: null })).status).toBe(503);
  });
});
