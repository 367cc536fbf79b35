// No input reaches a 500: each crafted input below answers 400 problem+json with its named code, and saves
// nothing. On the real core (PGlite), through the HTTP app — and, for what other doors can bring, through the
// services directly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../services/storable-guard.js';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from './testing/harness.js';

const analysis = { kind: 'analysis', subject: { config: { fn: 'echo' } } };
const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

let t: TestApp;
let runId = '';
beforeAll(async () => {
  t = await testApp();
  const r = await call(t.app, 'POST', '/runs', { body: cmd });
  runId = (r.body.run as { id: string }).id;
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

/** What is stored: runs, groups and subscriptions of the tenant (a refused input changes none of them). */
async function stored(): Promise<string> {
  const db = t.core.internals.deps.db;
  const n = async (table: 'runs' | 'run_groups' | 'subscriptions') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirst()
      )?.n,
    );
  return JSON.stringify([await n('runs'), await n('run_groups'), await n('subscriptions')]);
}

async function refused(
  method: string,
  path: string,
  code: string,
  opts: Parameters<typeof call>[3] = {},
): Promise<Awaited<ReturnType<typeof call>>> {
  const before = await stored();
  const r = await call(t.app, method, path, opts);
  const where = `${method} ${path} ${String(JSON.stringify(opts.body)).slice(0, 200)} → ${JSON.stringify(r.body)}`;
  expect(r.status, where).toBe(400);
  expect(r.type, where).toBe('application/problem+json');
  expect(r.body.code, where).toBe(code);
  expect(await stored(), where).toBe(before);
  return r;
}

describe('list cursors', () => {
  it('crafted cursors → 400 invalid_cursor, on runs and groups; an issued cursor pages', async () => {
    for (const cursor of [
      b64(['garbage', 'x']),
      b64(['', '']),
      b64(['2026-13-45T99:99:99.999Z', 'run_x']),
      b64(['2026-01-01T00:00:00.000Z', 'run\u0000x']),
      b64(['2026-01-01T00:00:00.000Z']),
      b64({ createdAt: '2026-01-01T00:00:00.000Z', id: 'x' }),
      b64([1, 2]),
      'not-base64-json',
    ]) {
      await refused('GET', `/runs?cursor=${cursor}`, 'invalid_cursor');
      await refused('GET', `/groups?cursor=${cursor}`, 'invalid_cursor');
    }
    await call(t.app, 'POST', '/runs', { body: cmd });
    const first = await call(t.app, 'GET', '/runs?limit=1');
    const next = await call(t.app, 'GET', `/runs?limit=1&cursor=${String(first.body.nextCursor)}`);
    expect(next.status).toBe(200);
    expect((next.body.items as { id: string }[])[0]?.id).not.toBe(
      (first.body.items as { id: string }[])[0]?.id,
    );
  });
});

describe('event positions', () => {
  const past = '9223372036854775808'; // bigint max + 1
  const sse = { accept: 'text/event-stream' };

  it('`after` past the bigint range → 400 out_of_range (JSON page and SSE); the maximum itself is fine', async () => {
    await refused('GET', `/runs/${runId}/events?after=${past}`, 'out_of_range');
    await refused('GET', `/runs/${runId}/events?after=${past}`, 'out_of_range', { headers: sse });
    await refused('GET', `/runs/${runId}/events?after=99999999999999999999`, 'out_of_range');
    await refused('GET', `/runs/${runId}/events?after=abc`, 'validation_failed');
    const max = await call(t.app, 'GET', `/runs/${runId}/events?after=9223372036854775807`);
    expect(max.status).toBe(200);
    expect(max.body.items).toEqual([]);
  });

  it('Last-Event-ID past the bigint range → 400 out_of_range before any stream starts', async () => {
    await refused('GET', `/runs/${runId}/events`, 'out_of_range', {
      headers: { ...sse, 'last-event-id': past },
    });
    await refused('GET', `/runs/${runId}/events`, 'validation_failed', {
      headers: { ...sse, 'last-event-id': 'abc' },
    });
  });

  it('the services refuse an out-of-range position from any door', async () => {
    const admin = await t.core.services.auth.authenticate(ADMIN_KEY);
    await expect(t.core.services.runs.events(admin, runId, { after: past })).rejects.toMatchObject({
      code: 'out_of_range',
    });
    await expect(t.core.services.events.list(admin, { after: past })).rejects.toMatchObject({
      code: 'out_of_range',
    });
  });
});

describe('numbers past the ledger columns', () => {
  it('→ 400 out_of_range, with the bound in the OpenAPI document', async () => {
    const cases: [string, string, unknown][] = [
      ['POST', '/runs', { ...cmd, envelope: { capRuns: 2 ** 31 } }],
      ['POST', '/runs', { ...cmd, envelope: { inFlightCap: 2 ** 31 } }],
      ['POST', '/runs', { ...cmd, envelope: { capTokens: 2 ** 53 } }],
      ['POST', '/runs', { ...cmd, ttlSec: 2 ** 31 }],
      ['POST', '/runs', { ...cmd, ttlSec: 2 ** 53 }],
      ['POST', '/groups', { kind: 'batch', spec: { ...cmd, envelope: { capRuns: 2 ** 31 } }, repeat: 1 }],
      [
        'POST',
        '/subscriptions',
        { name: 's', selector: { kind: 'run.queued' }, runSpec: cmd, cooldownSec: 2 ** 31 },
      ],
      [
        'POST',
        '/runs',
        `{"kind":"command","subject":${JSON.stringify(cmd.subject)},"envelope":{"capUsd":1e400}}`,
      ],
    ];
    for (const [method, path, body] of cases) await refused(method, path, 'out_of_range', { body });
    const bridge = await call(t.app, 'POST', '/internal/agent-run-events', {
      key: INTERNAL_TOKEN,
      headers: { 'x-everdict-tenant': 'default' },
      body: { event: 'started', agent: { agentId: 'exit' } },
    });
    await refused('POST', '/internal/agent-run-events', 'out_of_range', {
      key: INTERNAL_TOKEN,
      headers: { 'x-everdict-tenant': 'default' },
      body: { runId: String(bridge.body.id), event: 'failed', outputs: { exitCode: 2 ** 31 } },
    });
    const doc = (await call(t.app, 'GET', '/openapi.json', { key: null })).body as {
      components: { schemas: Record<string, unknown> };
    };
    expect(JSON.stringify(doc)).toContain('"maximum":2147483647');
  });
});

describe('strings and nesting PostgreSQL cannot take', () => {
  it('lone UTF-16 surrogates anywhere in a JSON body → 400 invalid_unicode; a paired one is text', async () => {
    const bodies = [
      '{"kind":"analysis","subject":{"config":{"x":"\\ud800"}}}',
      '{"kind":"analysis","subject":{"config":{"\\udc00":1}}}',
      `{"kind":"analysis","subject":{"config":{"x":${'['.repeat(60)}"a\\udfffb"${']'.repeat(60)}}}}`,
      '{"kind":"analysis","subject":{"config":{}},"requestId":"\\ud83d"}',
    ];
    for (const body of bodies) await refused('POST', '/runs', 'invalid_unicode', { body });
    await refused('POST', '/subscriptions', 'invalid_unicode', {
      body: '{"name":"\\ud800","selector":{"kind":"run.queued"},"runSpec":{"kind":"analysis"}}',
    });
    const ok = await call(t.app, 'POST', '/runs', {
      body: '{"kind":"analysis","subject":{"config":{"x":"\\ud83d\\ude00"}}}',
    });
    expect(ok.status).toBe(201);
    expect((ok.body.run as { subject: { config: { x: string } } }).subject.config.x).toBe('😀');
  });

  it(`bodies nested deeper than ${MAX_JSON_DEPTH} levels → 400 too_deep (10,000 levels too); ${MAX_JSON_DEPTH} is fine`, async () => {
    const nested = (levels: number) =>
      `{"kind":"analysis","subject":{"config":{"x":${'['.repeat(levels - 3)}1${']'.repeat(levels - 3)}}}}`;
    await refused('POST', '/runs', 'too_deep', { body: nested(10_000) });
    await refused('POST', '/runs', 'too_deep', { body: nested(MAX_JSON_DEPTH + 1) });
    await refused('POST', '/internal/agent-run-events', 'too_deep', {
      key: INTERNAL_TOKEN,
      headers: { 'x-everdict-tenant': 'default' },
      body: `{"event":"started","agent":{"agentId":"deep"},"outputs":{"result":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`,
    });
    expect((await call(t.app, 'POST', '/runs', { body: nested(MAX_JSON_DEPTH) })).status).toBe(201);
  });

  it('NUL at any depth → 400 nul_character', async () => {
    const body = `{"kind":"analysis","subject":{"config":{"x":${'['.repeat(100)}"a\\u0000"${']'.repeat(100)}}}}`;
    await refused('POST', '/runs', 'nul_character', { body });
  });

  it('the services refuse the same from any door (deep values never overflow the walk)', async () => {
    const admin = await t.core.services.auth.authenticate(ADMIN_KEY);
    let deep: unknown = 'leaf';
    for (let i = 0; i < 10_000; i++) deep = [deep];
    const before = await stored();
    await expect(
      t.core.services.runs.create(admin, { kind: 'analysis', subject: { config: { deep } } }),
    ).rejects.toMatchObject({ code: 'too_deep' });
    let nul: unknown = 'a\u0000b';
    for (let i = 0; i < 100; i++) nul = { nul };
    await expect(
      t.core.services.runs.create(admin, { kind: 'analysis', subject: { config: { nul } } }),
    ).rejects.toMatchObject({ code: 'nul_character' });
    await expect(
      t.core.services.subscriptions.create(admin, {
        name: 'x\ud800',
        selector: { kind: 'run.queued' },
        runSpec: analysis,
      }),
    ).rejects.toMatchObject({ code: 'invalid_unicode' });
    expect(await stored()).toBe(before);
  });
});

describe('subscriptions are checked when created, not when they fire', () => {
  it('an unknown time zone, or a run spec the run schema refuses → 400, nothing saved', async () => {
    await refused('POST', '/subscriptions', 'validation_failed', {
      body: { name: 's', schedule: { cron: '0 * * * *', timezone: 'Mars/Olympus_Mons' }, runSpec: analysis },
    });
    // A cron its parser cannot read: the refusal names the expression and says why, without the parser's
    // `Error: ` prefix.
    const cron = await refused('POST', '/subscriptions', 'bad_request', {
      body: { name: 's', schedule: { cron: 'every tuesday' }, runSpec: analysis },
    });
    expect(cron.body.detail).toMatch(/^bad cron "every tuesday" \(timezone UTC\): \S/);
    expect(cron.body.detail).not.toMatch(/Error: /);
    // What a schema refuses is validation_failed naming the body field (as the edge answers); what the core
    // refuses of a valid spec (an analysis run placed elsewhere than inline) is bad_request.
    for (const [runSpec, code, field] of [
      [{ kind: 'eval', subject: { nope: 1 } }, 'validation_failed', 'runSpec.subject'],
      [
        { kind: 'agent', subject: { agentId: 'a', permissionMode: 'yolo' } },
        'validation_failed',
        'runSpec.subject',
      ],
      [
        { kind: 'analysis', subject: { config: {} }, placement: { where: 'driver' } },
        'bad_request',
        undefined,
      ],
      [
        { kind: 'sandbox', subject: { image: 'alpine:3.20' }, lifetime: 'session' },
        'validation_failed',
        'runSpec.ttlSec',
      ],
    ] as const) {
      const r = await refused('POST', '/subscriptions', code, {
        body: { name: 's', selector: { kind: 'run.queued' }, runSpec },
      });
      if (field === undefined) expect(r.body).not.toHaveProperty('issues');
      else expect(r.body.detail, JSON.stringify(r.body)).toMatch(new RegExp(`^body field "${field}(\\.|")`));
    }
    const ok = await call(t.app, 'POST', '/subscriptions', {
      body: { name: 'ok', schedule: { cron: '0 * * * *', timezone: 'Europe/Berlin' }, runSpec: analysis },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });
});
