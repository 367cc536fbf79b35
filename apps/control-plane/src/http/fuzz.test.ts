// A seeded fuzz over the app's own OpenAPI document, on the real core (PGlite): every operation it lists,
// with bodies, queries, headers and path ids generated from its schemas and salted with lone surrogates,
// NUL, nesting past the limit, numbers past every column and crafted cursors; plus garbage routes. The
// invariant: never a 5xx, and every refusal is application/problem+json whose code is of the one
// vocabulary, with the status that code has. Reproduce a failure with FUZZ_SEED (printed on every run).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRefusalCode, REFUSALS } from '../errors.js';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from './testing/harness.js';
import { nasty, raw, type Schema, SchemaArbitraries, withRawTokens } from './testing/openapi-arbitrary.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261201);
const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 450);
const GARBAGE_RUNS = Number(process.env.FUZZ_GARBAGE_RUNS ?? 600);

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  schema: Schema;
}
interface Operation {
  method: string;
  path: string;
  parameters?: Parameter[];
  security?: Record<string, unknown>[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

let t: TestApp;
let operations: Operation[] = [];
let arbs: SchemaArbitraries;
let known: { ids: string[]; memberKey: string } = { ids: [], memberKey: '' };

beforeAll(async () => {
  t = await testApp({ maxBodyBytes: 64 * 1024 });
  const doc = t.document() as {
    paths: Record<string, Record<string, Omit<Operation, 'method' | 'path'>>>;
    components: { schemas: Record<string, Schema> };
  };
  arbs = new SchemaArbitraries(doc.components.schemas);
  operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ ...op, method: method.toUpperCase(), path })),
  );
  const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };
  const run = await call(t.app, 'POST', '/runs', { body: cmd });
  const group = await call(t.app, 'POST', '/groups', { body: { kind: 'experiment', spec: cmd, repeat: 2 } });
  const sub = await call(t.app, 'POST', '/subscriptions', {
    body: { name: 's', selector: { kind: 'run.settled' }, runSpec: cmd },
  });
  const agent = await call(t.app, 'POST', '/internal/agent-run-events', {
    key: INTERNAL_TOKEN,
    headers: { 'x-everdict-tenant': 'default' },
    body: { event: 'started', agent: { agentId: 'fuzz' } },
  });
  await t.tenant('acme');
  const member = await call(t.app, 'POST', '/api-keys', { body: { role: 'member' } });
  known = {
    ids: [
      (run.body.run as { id: string }).id,
      (group.body.group as { id: string }).id,
      String(sub.body.id),
      String(agent.body.id),
      String(member.body.id),
    ],
    memberKey: String(member.body.key),
  };
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

/** encodeURIComponent, except that a lone surrogate becomes bytes no UTF-8 decoder accepts. */
function encode(v: string): string {
  try {
    return encodeURIComponent(v);
  } catch {
    return v.replace(/[^\w.-]/gu, (ch) => {
      try {
        return encodeURIComponent(ch);
      } catch {
        return '%ED%A0%80';
      }
    });
  }
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const craftedCursor = fc.oneof(
  fc.constantFrom(
    b64(['garbage', 'x']),
    b64(['', '']),
    b64(['2026-02-30T25:61:61.000Z', 'run_x']),
    b64(['2026-01-01T00:00:00.000Z', 'run\u0000x']),
    b64(['2026-01-01T00:00:00.000Z', '\ud800']),
    b64([1, 2, 3]),
    b64(null),
    '%00',
    'e30',
  ),
  fc.tuple(fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 })).map(b64),
  fc.string({ maxLength: 40 }),
);
const position = fc.oneof(
  fc.constantFrom(
    '0',
    '1',
    '9223372036854775807',
    '9223372036854775808',
    '99999999999999999999',
    '-1',
    'abc',
  ),
  fc.bigInt({ min: 0n, max: 2n ** 70n }).map(String),
);
const text = (v: unknown) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

function parameterValue(p: Parameter): fc.Arbitrary<string> {
  if (p.name === 'cursor') return fc.oneof(craftedCursor, arbs.value(p.schema).map(text));
  if (p.name === 'after' || p.name === 'last-event-id') return position;
  if (p.name === 'x-everdict-caused-by' || p.in === 'path') {
    return fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...known.ids) },
      { weight: 2, arbitrary: arbs.value(p.schema).map(text) },
      { weight: 1, arbitrary: fc.constantFrom('..', '%2e%2e', 'a'.repeat(250), '\ud800', 'x\u0000') },
    );
  }
  if (p.name === 'x-everdict-tenant') return fc.constantFrom('default', 'acme', 'nope', 'BAD TENANT', '');
  return fc.oneof(
    { weight: 4, arbitrary: arbs.value(p.schema).map(text) },
    { weight: 1, arbitrary: nasty.map(text) },
  );
}

function credential(op: Operation): fc.Arbitrary<string | null> {
  const internal = op.security?.some((s) => 'internalToken' in s) ?? false;
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant(internal ? INTERNAL_TOKEN : ADMIN_KEY) },
    { weight: 2, arbitrary: fc.constant(known.memberKey) },
    { weight: 1, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('garbage-credential-0000', internal ? ADMIN_KEY : INTERNAL_TOKEN),
    },
  );
}

/** The body text: JSON from the schema (raw tokens spliced in), else garbage; fan-out kept small. */
function bodyText(op: Operation): fc.Arbitrary<string | undefined> {
  const schema = op.requestBody?.content['application/json']?.schema;
  if (!schema) return fc.option(fc.string({ maxLength: 20 }), { nil: undefined, freq: 4 });
  return fc.oneof(
    {
      weight: 10,
      arbitrary: arbs
        .value(schema)
        .map((v) => withRawTokens(JSON.stringify(v) ?? 'null'))
        .map((s) => s.replace(/"repeat":(\d+)/g, (_m, n: string) => `"repeat":${(Number(n) % 3) + 1}`))
        // long-polls (agent turn leases) answer at once: the fuzz is about answers, not waiting
        .map((s) => s.replace(/"waitMs":\d+/g, '"waitMs":0')),
    },
    { weight: 1, arbitrary: fc.constantFrom('{', '{"kind":', '[1,2', 'null', '""', '{"a":1}}', '\u0000') },
    { weight: 1, arbitrary: fc.constant(raw('x')).map(() => `{"kind":${'['.repeat(10_000)}`) },
  );
}

interface Tally {
  total: number;
  statuses: Map<number, number>;
  codes: Map<string, number>;
}

async function check(
  tally: Tally,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
) {
  const res = await t.app.request(path, {
    method,
    headers,
    ...(body === undefined || method === 'GET' || method === 'HEAD' ? {} : { body }),
  });
  tally.total++;
  tally.statuses.set(res.status, (tally.statuses.get(res.status) ?? 0) + 1);
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('text/event-stream')) {
    await res.body?.cancel(); // a live stream of a run that never settles here: its status is the answer
    return;
  }
  const payload = await res.text();
  const where = `${method} ${path} ${JSON.stringify(headers)} ${body?.slice(0, 300)} → ${res.status} ${payload.slice(0, 300)}`;
  expect(res.status, where).toBeLessThan(500);
  expect(res.headers.get('x-content-type-options'), where).toBe('nosniff');
  if (res.status < 400) return;
  expect(type, where).toBe('application/problem+json');
  if (method === 'HEAD') return;
  const p = JSON.parse(payload) as { code?: string; status?: number };
  expect(isRefusalCode(String(p.code)), where).toBe(true);
  expect(p.status, where).toBe(res.status);
  expect(REFUSALS[p.code as keyof typeof REFUSALS].status, where).toBe(res.status);
  tally.codes.set(String(p.code), (tally.codes.get(String(p.code)) ?? 0) + 1);
}

describe('fuzz over the OpenAPI document, on the real core', () => {
  it(`every operation × ${RUNS_PER_OPERATION} requests, plus ${GARBAGE_RUNS} garbage routes: no 5xx`, async () => {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const tally: Tally = { total: 0, statuses: new Map(), codes: new Map() };
    expect(operations.length).toBeGreaterThanOrEqual(20);
    const timings: Record<string, number> = {};
    for (const [i, op] of operations.entries()) {
      const opStarted = performance.now();
      const params = op.parameters ?? [];
      const values = fc.record(
        Object.fromEntries(
          params.map((p) => [
            `${p.in}:${p.name}`,
            p.in === 'path' ? parameterValue(p) : fc.option(parameterValue(p), { nil: undefined, freq: 2 }),
          ]),
        ) as Record<string, fc.Arbitrary<string | undefined>>,
      );
      await fc.assert(
        fc.asyncProperty(
          values,
          credential(op),
          bodyText(op),
          fc.oneof(
            { weight: 10, arbitrary: fc.constant('application/json') },
            {
              weight: 1,
              arbitrary: fc.constantFrom('text/plain', '', 'application/problem+json; charset=utf-8'),
            },
          ),
          fc.boolean(),
          async (vals, cred, body, contentType, stream) => {
            const headers: Record<string, string> = {};
            if (cred !== null) headers.authorization = `Bearer ${cred}`;
            if (body !== undefined && contentType) headers['content-type'] = contentType;
            if (stream && op.path.endsWith('/events')) headers.accept = 'text/event-stream';
            const query = new URLSearchParams();
            let path = op.path;
            for (const p of params) {
              const v = vals[`${p.in}:${p.name}`];
              if (v === undefined) continue;
              if (p.in === 'path') path = path.replace(`{${p.name}}`, encode(v) || 'x');
              else if (p.in === 'header') headers[p.name] = v.replace(/[^\x20-\x7e]/g, '?');
              else query.append(p.name, v);
            }
            const qs = [...query].map(([k, v]) => `${k}=${encode(v)}`).join('&');
            await check(tally, op.method, qs ? `${path}?${qs}` : path, headers, body);
          },
        ),
        { numRuns: RUNS_PER_OPERATION, seed: SEED + i },
      );
      timings[`${op.method} ${op.path}`] = Math.round(performance.now() - opStarted);
    }
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
              'events',
              ...known.ids,
            ),
            fc.string({ maxLength: 12 }).map(encode),
          ),
          { maxLength: 4 },
        ),
        fc.boolean(),
        fc.option(fc.oneof(fc.string({ maxLength: 40 }), fc.constant(`{"pad":"${'x'.repeat(70_000)}"}`)), {
          nil: undefined,
        }),
        async (method, segs, authed, body) => {
          const headers: Record<string, string> = authed
            ? { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }
            : {};
          await check(tally, method, `/${segs.join('/')}`, headers, body);
        },
      ),
      { numRuns: GARBAGE_RUNS, seed: SEED - 1 },
    );
    const ms = Math.round(performance.now() - started);
    const used = process.cpuUsage(cpu);
    const cpuMs = Math.round((used.user + used.system) / 1000);
    const sorted = <K>(m: Map<K, number>) =>
      Object.fromEntries([...m].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
    console.log(`FUZZ-TIMINGS ${JSON.stringify(timings)}`);
    console.log(
      `FUZZ ${JSON.stringify({ seed: SEED, operations: operations.length, requests: tally.total, ms, cpuMs, statuses: sorted(tally.statuses), codes: sorted(tally.codes) })}`,
    );
    expect(tally.total).toBeGreaterThanOrEqual(10_000);
    // The salt reached the core's refusals, not only the validator's.
    for (const code of ['invalid_cursor', 'out_of_range', 'invalid_unicode', 'too_deep', 'nul_character']) {
      expect(tally.codes.get(code) ?? 0, code).toBeGreaterThan(0);
    }
  }, 600_000);
});
