// Fuzz every route's inputs through the real app in-process: schema-derived bodies and queries (plus
// garbage), real and bogus ids, every kind of credential and content-type. The invariant: never a 500,
// and every refusal is application/problem+json with a code.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { buildApp } from '../app.js';
import { startCore } from '../services/index.js';
import {
  AgentRunEventInput,
  CreateGroupInput,
  CreateKeyInput,
  CreateRunInput,
  CreateSubscriptionInput,
  ListGroupsQuery,
  ListRunsQuery,
  PromoteGroupInput,
  ScoreGroupInput,
} from '../services/types.js';
import { CreateTenantInput } from './tenants.js';
import { arbitraryFor, rawBodyArbitrary } from './testing/arbitrary.js';
import { ADMIN_KEY, call, fakeApp, INTERNAL_TOKEN } from './testing/harness.js';

const RUNS_PER_TARGET = Number(process.env.FUZZ_RUNS ?? 700);
const REAL_RUNS_PER_TARGET = Number(process.env.FUZZ_CORE_RUNS ?? 250);
type Fetcher = { request(input: string, init?: RequestInit): Response | Promise<Response> };

interface Target {
  readonly name: string;
  readonly method: string;
  readonly path: (id: string) => string;
  readonly body?: z.ZodType;
  readonly query?: z.ZodType;
  readonly internal?: boolean;
}

const targets: Target[] = [
  { name: 'POST /runs', method: 'POST', path: () => '/runs', body: CreateRunInput },
  { name: 'GET /runs', method: 'GET', path: () => '/runs', query: ListRunsQuery },
  { name: 'GET /runs/:id', method: 'GET', path: (id) => `/runs/${id}` },
  { name: 'POST /runs/:id/cancel', method: 'POST', path: (id) => `/runs/${id}/cancel` },
  { name: 'GET /runs/:id/record', method: 'GET', path: (id) => `/runs/${id}/record` },
  { name: 'GET /runs/:id/events', method: 'GET', path: (id) => `/runs/${id}/events` },
  { name: 'POST /groups', method: 'POST', path: () => '/groups', body: CreateGroupInput },
  { name: 'GET /groups', method: 'GET', path: () => '/groups', query: ListGroupsQuery },
  { name: 'GET /groups/:id', method: 'GET', path: (id) => `/groups/${id}` },
  {
    name: 'POST /groups/:id/score',
    method: 'POST',
    path: (id) => `/groups/${id}/score`,
    body: ScoreGroupInput,
  },
  {
    name: 'POST /groups/:id/promote',
    method: 'POST',
    path: (id) => `/groups/${id}/promote`,
    body: PromoteGroupInput,
  },
  {
    name: 'POST /subscriptions',
    method: 'POST',
    path: () => '/subscriptions',
    body: CreateSubscriptionInput,
  },
  { name: 'GET /subscriptions/:id', method: 'GET', path: (id) => `/subscriptions/${id}` },
  { name: 'DELETE /subscriptions/:id', method: 'DELETE', path: (id) => `/subscriptions/${id}` },
  { name: 'POST /tenants', method: 'POST', path: () => '/tenants', body: CreateTenantInput },
  { name: 'POST /api-keys', method: 'POST', path: () => '/api-keys', body: CreateKeyInput },
  {
    name: 'POST /internal/agent-run-events',
    method: 'POST',
    path: () => '/internal/agent-run-events',
    body: AgentRunEventInput,
    internal: true,
  },
];

/** Keep fan-out small: the fuzzer is after edge cases, not after filling the queue. */
function tame(body: string): string {
  return body.replace(/"repeat":(\d+)/g, (_m, n: string) => `"repeat":${(Number(n) % 4) + 1}`);
}

const credential = (internal: boolean, memberKey: string) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constant(internal ? INTERNAL_TOKEN : ADMIN_KEY) },
    { weight: 2, arbitrary: fc.constant(memberKey) },
    { weight: 1, arbitrary: fc.constant<string | null>(null) },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\x21-\x7e]/g, 'x')) },
  );

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=utf-8',
      'application/problem+json',
      '',
    ),
  },
);

const queryString = (schema: z.ZodType | undefined) =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: schema
        ? arbitraryFor(schema).map((q) =>
            new URLSearchParams(
              Object.entries(q as Record<string, unknown>).map(([k, v]): [string, string] => [k, String(v)]),
            ).toString(),
          )
        : fc.constant(''),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 30 }).map((s) => encodeURIComponent(s)) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'limit=-1',
        'limit=1e9',
        'cursor=%00',
        'after=abc',
        'after=99999999999999999999',
        'status=',
        'kind=%E2%9C%93',
      ),
    },
  );

describe('fuzz: no 500s, every refusal a problem', () => {
  it(`fake services: every route × ${RUNS_PER_TARGET} requests, plus garbage routes`, async () => {
    const total = await fuzzAll(fakeApp({ maxBodyBytes: 16 * 1024 }).app, RUNS_PER_TARGET, 'fake');
    expect(total).toBeGreaterThanOrEqual(10_000);
  }, 120_000);

  it(`real core on PGlite: every route × ${REAL_RUNS_PER_TARGET} requests, plus garbage routes`, async () => {
    const core = await startCore({ bootstrapKey: ADMIN_KEY, scheduler: { enabled: false } });
    try {
      const { app } = buildApp({
        services: core.services,
        health: () => core.health(),
        internalToken: INTERNAL_TOKEN,
        maxBodyBytes: 16 * 1024,
      });
      expect(await fuzzAll(app, REAL_RUNS_PER_TARGET, 'core')).toBeGreaterThanOrEqual(
        REAL_RUNS_PER_TARGET * 18,
      );
    } finally {
      await core.close();
    }
  }, 120_000);
});

async function fuzzAll(app: Fetcher, runsPerTarget: number, label: string): Promise<number> {
  {
    const seed = await call(app, 'POST', '/runs', { body: { kind: 'analysis', subject: { config: {} } } });
    const runId = (seed.body.run as { id: string }).id;
    const group = await call(app, 'POST', '/groups', {
      body: { kind: 'experiment', spec: { kind: 'analysis', subject: { config: {} } }, repeat: 2 },
    });
    const groupId = (group.body.group as { id: string }).id;
    const sub = await call(app, 'POST', '/subscriptions', {
      body: {
        name: 's',
        selector: { kind: 'run.succeeded' },
        runSpec: { kind: 'analysis', subject: { config: {} } },
      },
    });
    const member = await call(app, 'POST', '/api-keys', { body: { role: 'member' } });
    const memberKey = String(member.body.key);
    const ids = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(runId, groupId, String(sub.body.id)) },
      { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('%2e%2e', '..', '%00', 'a'.repeat(250), '%E0%A4%A', '1;DROP', '%', '%zz'),
      },
    );

    let total = 0;
    const statuses = new Map<number, number>();
    const check = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
      const canHaveBody = method !== 'GET' && method !== 'HEAD';
      const res = await app.request(path, {
        method,
        headers,
        ...(body === undefined || !canHaveBody ? {} : { body }),
      });
      total++;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      const where = `${method} ${path} ${JSON.stringify(headers)} ${body?.slice(0, 300)} → ${res.status} ${text.slice(0, 300)}`;
      expect(res.status, where).toBeLessThan(500);
      if (res.status >= 400) {
        expect(res.headers.get('content-type'), where).toBe('application/problem+json');
        if (method === 'HEAD') return; // no body on HEAD
        const p = JSON.parse(text) as { code?: unknown; status?: unknown };
        expect(typeof p.code, where).toBe('string');
        expect(p.status, where).toBe(res.status);
      }
    };

    const timings: Record<string, number> = {};
    for (const t of targets) {
      const t0 = performance.now();
      const body = t.body
        ? rawBodyArbitrary(t.body)
        : fc.option(fc.string({ maxLength: 20 }), { nil: undefined, freq: 4 });
      await fc.assert(
        fc.asyncProperty(
          ids,
          queryString(t.query),
          credential(t.internal ?? false, memberKey),
          contentType,
          body,
          fc.constantFrom('default', 'acme', 'BAD TENANT', ''),
          async (id, q, cred, ct, b, tenant) => {
            const headers: Record<string, string> = {};
            if (cred !== null) headers.authorization = `Bearer ${cred}`;
            if (b !== undefined && ct) headers['content-type'] = ct;
            if (t.internal && tenant) headers['x-everdict-tenant'] = tenant;
            const path = t.path(id) + (q ? `?${q}` : '');
            await check(t.method, path, headers, b === undefined ? undefined : tame(b));
          },
        ),
        { numRuns: runsPerTarget },
      );
      timings[t.name] = Math.round(performance.now() - t0);
    }
    console.log(`FUZZ-TIMINGS ${label} ${JSON.stringify(timings)}`);

    // Garbage: any method on any path, with or without a key.
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
        fc.array(
          fc.oneof(
            fc.constantFrom(
              'runs',
              'groups',
              'internal',
              'api-keys',
              'subscriptions',
              'score',
              'cancel',
              'events',
            ),
            fc.string({ maxLength: 12 }).map(encodeURIComponent),
          ),
          { maxLength: 4 },
        ),
        fc.boolean(),
        fc.option(fc.oneof(fc.string({ maxLength: 40 }), fc.constant(`{"pad":"${'x'.repeat(20_000)}"}`)), {
          nil: undefined,
        }),
        async (method, segs, authed, b) => {
          const headers: Record<string, string> = authed
            ? { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }
            : {};
          await check(method, `/${segs.join('/')}`, headers, b);
        },
      ),
      { numRuns: runsPerTarget },
    );

    const byStatus = Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0]));
    console.log(`FUZZ ${JSON.stringify({ label, requests: total, statuses: byStatus })}`);
    return total;
  }
}
