// The real refusals, through the HTTP app on the real core: the gate's rules by name, Retry-After when the
// gate knows a time, in-flight caps (tenant policy → root envelope; a create → its slice), usage an agent
// reports validated as run-model's Usage, and what a caller may name: causers and groups.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMISSION_RULES } from '../errors.js';
import { call, INTERNAL_TOKEN, type TestApp, testApp } from './testing/harness.js';

const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };
const PROBLEM = 'application/problem+json';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

const runId = (r: { body: Record<string, unknown> }) => (r.body.run as { id: string }).id;
const causedBy = (id: string) => ({ 'x-everdict-caused-by': id });

function expectRefusal(
  r: Awaited<ReturnType<typeof call>>,
  rule: keyof typeof ADMISSION_RULES,
  status: number,
): void {
  const where = JSON.stringify(r.body);
  expect(r.status, where).toBe(status);
  expect(r.type).toBe(PROBLEM);
  expect(r.body.code, where).toBe(ADMISSION_RULES[rule].code);
  expect(r.body.rule, where).toBe(rule);
  const retryAfter = r.headers.get('retry-after');
  if (ADMISSION_RULES[rule].retryAfter) {
    expect(retryAfter, where).toMatch(/^[1-9]\d*$/);
    expect((r.body.details as { retry: { when: string } }).retry.when).toBe('at');
  } else expect(retryAfter, where).toBeNull();
}

describe('the gate refuses with its own rules', () => {
  it('429 queue_depth with Retry-After, counted under that rule', async () => {
    const key = await t.tenant('q1', { maxQueued: 1 });
    expect((await call(t.app, 'POST', '/runs', { key, body: cmd })).status).toBe(201);
    expectRefusal(await call(t.app, 'POST', '/runs', { key, body: cmd }), 'queue_depth', 429);
    const { body } = await t.metrics.render();
    expect(body).toMatch(
      /everdict_admissions_total\{outcome="refused_429",kind="command",rule="queue_depth"\} 1/,
    );
  });

  it("429 concurrency at the tenant policy's in-flight cap (the root envelope's)", async () => {
    const key = await t.tenant('c1', { inFlightCap: 2 });
    for (let i = 0; i < 2; i++)
      expect((await call(t.app, 'POST', '/runs', { key, body: cmd })).status).toBe(201);
    expectRefusal(await call(t.app, 'POST', '/runs', { key, body: cmd }), 'concurrency', 429);
  });

  it('envelope.inFlightCap on a create opens a slice with that cap; its children hit it (429 concurrency)', async () => {
    const root = await call(t.app, 'POST', '/runs', { body: { ...cmd, envelope: { inFlightCap: 2 } } });
    expect(root.status, JSON.stringify(root.body)).toBe(201);
    expect((root.body.run as { envelope: { inFlightCap?: number } }).envelope.inFlightCap).toBe(2);
    const child = await call(t.app, 'POST', '/runs', { body: cmd, headers: causedBy(runId(root)) });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    expect((child.body.admission as { envelopeId: string }).envelopeId).toBe(
      (root.body.admission as { envelopeId: string }).envelopeId,
    );
    const third = await call(t.app, 'POST', '/runs', { body: cmd, headers: causedBy(runId(root)) });
    expectRefusal(third, 'concurrency', 429);
    expect(String(third.body.detail)).toContain('in-flight cap 2');
  });

  it('402 envelope when a slice has no runs left (no Retry-After: only a raised budget helps)', async () => {
    const root = await call(t.app, 'POST', '/runs', { body: { ...cmd, envelope: { capRuns: 1 } } });
    expect(root.status).toBe(201);
    expectRefusal(
      await call(t.app, 'POST', '/runs', { body: cmd, headers: causedBy(runId(root)) }),
      'envelope',
      402,
    );
  });

  it('429 depth and children, without Retry-After (retrying never helps)', async () => {
    const key = await t.tenant('f1', { maxCausalDepth: 1, maxChildrenPerRun: 1 });
    const root = await call(t.app, 'POST', '/runs', { key, body: cmd });
    const child = await call(t.app, 'POST', '/runs', { key, body: cmd, headers: causedBy(runId(root)) });
    expect(child.status).toBe(201);
    expectRefusal(
      await call(t.app, 'POST', '/runs', { key, body: cmd, headers: causedBy(runId(root)) }),
      'children',
      429,
    );
    expectRefusal(
      await call(t.app, 'POST', '/runs', { key, body: cmd, headers: causedBy(runId(child)) }),
      'depth',
      429,
    );
  });
});

describe('usage an agent reports is run-model Usage', () => {
  const internal = { key: INTERNAL_TOKEN, headers: { 'x-everdict-tenant': 'default' } };
  const rootSpent = async () => {
    const { rows } = await sql<{ spent_tokens: number; spent_usd: number }>`
      SELECT spent_tokens, spent_usd FROM adm_envelopes_now WHERE tenant = 'default' AND parent_id IS NULL`.execute(
      t.core.internals.deps.db,
    );
    return { tokens: Number(rows[0]?.spent_tokens), usd: Number(rows[0]?.spent_usd) };
  };

  it('a negative, non-integer or unknown usage field is a 400 that changes nothing; a valid one is charged', async () => {
    const started = await call(t.app, 'POST', '/internal/agent-run-events', {
      ...internal,
      body: { event: 'started', agent: { agentId: 'usage-agent' } },
    });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const id = String(started.body.id);
    const before = await rootSpent();
    for (const [usage, code] of [
      [{ outputTokens: -5_000_000 }, 'out_of_range'],
      [{ costUsd: -1 }, 'out_of_range'],
      [{ inputTokens: 1.5 }, 'validation_failed'],
      [{ tokens: -5_000_000 }, 'validation_failed'],
    ] as const) {
      const r = await call(t.app, 'POST', '/internal/agent-run-events', {
        ...internal,
        body: { runId: id, event: 'succeeded', usage },
      });
      expect(r.status, JSON.stringify(usage)).toBe(400);
      expect(r.body.code, JSON.stringify(r.body)).toBe(code);
    }
    // A huge exponent is Infinity once parsed: out of range, not a credit and not a 500.
    const inf = await call(t.app, 'POST', '/internal/agent-run-events', {
      ...internal,
      body: `{"runId":"${id}","event":"succeeded","usage":{"costUsd":1e400}}`,
    });
    expect(inf.status).toBe(400);
    expect(inf.body.code).toBe('out_of_range');
    expect((await call(t.app, 'GET', `/runs/${id}`)).body.status).toBe('running');
    expect(await rootSpent()).toEqual(before);
    const ok = await call(t.app, 'POST', '/internal/agent-run-events', {
      ...internal,
      body: { runId: id, event: 'succeeded', usage: { inputTokens: 40, outputTokens: 60, costUsd: 0.25 } },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.usage).toMatchObject({ inputTokens: 40, outputTokens: 60, costUsd: 0.25 });
    const after = await rootSpent();
    expect(after.tokens - before.tokens).toBe(100);
    expect(after.usd - before.usd).toBeCloseTo(0.25, 9);
  });
});

describe('what a caller may name', () => {
  it('X-Everdict-Caused-By: only a run of the same key, or any run of the tenant for its admin; else 404', async () => {
    const alice = await t.key('member');
    const bob = await t.key('member');
    const acme = await t.tenant('acme-causes');
    const root = await call(t.app, 'POST', '/runs', { key: alice, body: cmd });
    const id = runId(root);
    for (const key of [bob, acme]) {
      const r = await call(t.app, 'POST', '/runs', { key, body: cmd, headers: causedBy(id) });
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('not_found');
    }
    expect(
      (await call(t.app, 'POST', '/runs', { key: alice, body: cmd, headers: causedBy(id) })).status,
    ).toBe(201);
    expect((await call(t.app, 'POST', '/runs', { body: cmd, headers: causedBy(id) })).status).toBe(201); // admin
    const caused = await call(t.app, 'GET', `/runs?causedBy=${id}`);
    expect((caused.body.items as unknown[]).length).toBe(2); // the refused ones left nothing behind
  });

  it("a group reference to another tenant's group (or to none) is a 404; the tenant's own is fine", async () => {
    const acme = await t.tenant('acme-groups');
    const theirs = await call(t.app, 'POST', '/groups', {
      key: acme,
      body: { kind: 'batch', spec: cmd, repeat: 1 },
    });
    const theirId = (theirs.body.group as { id: string }).id;
    const mine = await call(t.app, 'POST', '/groups', { body: { kind: 'batch', spec: cmd, repeat: 1 } });
    const myId = (mine.body.group as { id: string }).id;
    for (const id of [theirId, 'grp_does_not_exist']) {
      const r = await call(t.app, 'POST', '/runs', { body: { ...cmd, group: { id, role: 'child' } } });
      expect(r.status, id).toBe(404);
      expect(r.body.code).toBe('not_found');
      const s = await call(t.app, 'POST', '/subscriptions', {
        body: {
          name: 's',
          selector: { kind: 'run.queued' },
          runSpec: { ...cmd, group: { id, role: 'child' } },
        },
      });
      expect(s.status, id).toBe(404);
    }
    const ok = await call(t.app, 'POST', '/runs', { body: { ...cmd, group: { id: myId, role: 'child' } } });
    expect(ok.status).toBe(201);
    expect((await call(t.app, 'GET', `/groups/${theirId}`, { key: acme })).body.runIds).toHaveLength(1);
  });

  it("a requestId replay of a group lists the tenant's runs only", async () => {
    const body = { kind: 'batch', spec: cmd, repeat: 2, requestId: 'replay-1' };
    const first = await call(t.app, 'POST', '/groups', { body });
    const groupId = (first.body.group as { id: string }).id;
    // A row of another tenant that names this group id (as an older version let any caller write).
    await t.tenant('acme-replay');
    const db = t.core.internals.deps.db;
    await sql`INSERT INTO runs SELECT (jsonb_populate_record(r, jsonb_build_object(
        'id', 'run_foreign_row', 'tenant_id', 'acme-replay', 'record_head', r.record_head))).*
      FROM runs r WHERE r.id = ${(first.body.runs as { id: string }[])[0]!.id}`.execute(db);
    const replay = await call(t.app, 'POST', '/groups', { body });
    expect(replay.status).toBe(201);
    expect((replay.body.group as { id: string }).id).toBe(groupId);
    const runs = replay.body.runs as { id: string; tenant: string }[];
    expect(runs.map((r) => r.id).sort()).toEqual(
      (first.body.runs as { id: string }[]).map((r) => r.id).sort(),
    );
    expect(runs.every((r) => r.tenant === 'default')).toBe(true);
  });
});
