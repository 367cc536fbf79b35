// The README quickstart, step for step, through the real app on the real core (in-memory PGlite,
// scheduler running): an experiment of analysis runs, watching it finish, scoring and re-scoring,
// promotion, a causal tree cancelled from its root, a run's record verified, events, filters.
import { verifyWire } from '@everdict/runrecord';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../app.js';
import { type Core, startCore } from '../core.js';
import { createMetrics } from '../observability/metrics.js';
import { scriptedJudge } from '../services/index.js';
import { ADMIN_KEY, call } from './testing/harness.js';

let core: Core;
let app: ReturnType<typeof buildApp>['app'];

beforeAll(async () => {
  // As `pnpm start` runs it: the built-in scripted judge decides `judge` graders, and the core reports
  // admissions and dispatches to the app's metrics.
  const metrics = createMetrics();
  core = await startCore({
    bootstrapKey: ADMIN_KEY,
    judge: scriptedJudge(),
    scheduler: { enabled: true, pollMs: 25 },
    metrics: metrics.coreObserver(),
  });
  ({ app } = buildApp({ services: core.services, metrics, health: () => core.health() }));
});
afterAll(async () => {
  await core?.close();
});

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('quickstart through the real core', () => {
  let groupId = '';
  let runIds: string[] = [];

  it('creates an experiment of analysis runs and watches it finish', async () => {
    const created = await call(app, 'POST', '/groups', {
      body: {
        kind: 'experiment',
        label: 'echo 42',
        spec: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'hello', value: 42 } } },
        repeat: 3,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const group = created.body.group as { id: string; runIds: string[] };
    groupId = group.id;
    runIds = group.runIds;
    expect(runIds).toHaveLength(3);
    const done = await until('the group to settle', async () => {
      const g = await call(app, 'GET', `/groups/${groupId}`);
      const rollup = g.body.rollup as { status: string; byStatus: Record<string, number> };
      return rollup.status === 'succeeded' ? rollup : undefined;
    });
    expect(done.byStatus.succeeded).toBe(3);
    const runs = await call(app, 'GET', `/runs?groupId=${groupId}&status=succeeded`);
    expect((runs.body.items as unknown[]).length).toBe(3);
  });

  it('scores, re-scores (linked by rescoreOf) and promotes to a scorecard', async () => {
    // README step 3, verbatim graders.
    const scored = await call(app, 'POST', `/groups/${groupId}/score`, {
      body: {
        graders: [
          { type: 'exit_code' },
          { name: 'answer', type: 'json_field_equals', path: 'outputs.result', equals: 42 },
          { name: 'in-range', type: 'numeric_threshold', path: 'outputs.result', min: 40, max: 50 },
          // Against a field of the run itself (an eval case's expected answer reads the same way).
          {
            name: 'as-configured',
            type: 'json_field_equals',
            path: 'outputs.result',
            equalsPath: 'subject.config.value',
          },
        ],
      },
    });
    expect(scored.status, JSON.stringify(scored.body)).toBe(201);
    type Agg = { graders: { grader: string; passRate: number | null }[] };
    const rate = (agg: Agg, name: string) => agg.graders.find((g) => g.grader === name)?.passRate;
    const scoring = scored.body.scoring as { id: string; aggregate: Agg };
    expect(rate(scoring.aggregate, 'exit_code')).toBe(1);
    expect(rate(scoring.aggregate, 'answer')).toBe(1);
    expect(rate(scoring.aggregate, 'in-range')).toBe(1);
    expect(rate(scoring.aggregate, 'as-configured')).toBe(1);
    // README step 4: a regex, a contains and a judge (the built-in scripted one), linked by rescoreOf.
    const rescored = await call(app, 'POST', `/groups/${groupId}/score`, {
      body: {
        graders: [
          { name: 'greets', type: 'output_regex', pattern: '^hel+o$' },
          { name: 'mentions', type: 'output_contains', text: 'bye' },
          { name: 'judged', type: 'judge', judgeId: 'keywords', rubric: 'hello' },
        ],
        rescoreOf: scoring.id,
      },
    });
    expect(rescored.status, JSON.stringify(rescored.body)).toBe(201);
    const again = rescored.body.scoring as { rescoreOf: string; aggregate: Agg };
    expect(again.rescoreOf).toBe(scoring.id);
    expect(rate(again.aggregate, 'greets')).toBe(1);
    expect(rate(again.aggregate, 'mentions')).toBe(0);
    expect(rate(again.aggregate, 'judged')).toBe(1);
    const run = await call(app, 'GET', `/runs/${runIds[0]}`);
    expect((run.body.outputs as { scores: unknown[] }).scores).toHaveLength(7);
    // Each verdict with its detail, oldest first; the re-score's rows name the scoring they re-do.
    const verdicts = await call(app, 'GET', `/runs/${runIds[0]}/scores`);
    expect(verdicts.status, JSON.stringify(verdicts.body)).toBe(200);
    const scores = verdicts.body.scores as {
      grader: string;
      passed?: boolean;
      detail: string;
      scoringId: string;
      rescoreOf?: string;
      runId: string;
    }[];
    // Each scoring's verdicts in the order its graders were given.
    expect(scores.map((v) => v.grader)).toEqual([
      'exit_code',
      'answer',
      'in-range',
      'as-configured',
      'greets',
      'mentions',
      'judged',
    ]);
    expect(scores.slice(0, 4).every((v) => v.scoringId === scoring.id && v.rescoreOf === undefined)).toBe(
      true,
    );
    expect(scores.slice(4).every((v) => v.rescoreOf === scoring.id)).toBe(true);
    expect(scores.every((v) => v.runId === runIds[0])).toBe(true);
    expect(scores.find((v) => v.grader === 'as-configured')).toMatchObject({
      passed: true,
      detail: 'outputs.result equals subject.config.value 42',
    });
    expect(scores.find((v) => v.grader === 'mentions')).toMatchObject({
      passed: false,
      detail: 'outputs.summary does not contain "bye"',
    });
    const nobody = await call(app, 'GET', '/runs/run_00000000000000000000000000/scores');
    expect(nobody.status).toBe(404);
    expect(nobody.type).toBe('application/problem+json');
    const unknown = await call(app, 'POST', `/groups/${groupId}/score`, {
      body: { graders: [{ name: 'ok', type: 'status' }] },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.type).toBe('application/problem+json');
    const promoted = await call(app, 'POST', `/groups/${groupId}/promote`, {
      body: { graders: [{ type: 'exit_code' }] },
    });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    expect(promoted.body.kind).toBe('scorecard');
    const twice = await call(app, 'POST', `/groups/${groupId}/promote`, {
      body: { graders: [{ type: 'exit_code' }] },
    });
    expect(twice.status).toBe(409);
    expect(twice.type).toBe('application/problem+json');
  });

  it('fetches a run record, verified on read, whose wire form verifies with @everdict/runrecord', async () => {
    const runId = runIds[0]!;
    const rec = await call(app, 'GET', `/runs/${runId}/record`);
    expect(rec.status).toBe(200);
    expect((rec.body.verify as { ok: boolean }).ok).toBe(true);
    const wire = await call(app, 'GET', `/runs/${runId}/record?view=wire`);
    expect(wire.body).toEqual(rec.body.wire);
    const verdict = verifyWire(wire.body);
    expect(verdict.ok, verdict.ok ? '' : `${verdict.error}: ${verdict.message}`).toBe(true);
    const events = await call(app, 'GET', `/runs/${runId}/events`);
    const kinds = (events.body.items as { kind: string }[]).map((e) => e.kind);
    expect(kinds[0]).toBe('run.queued');
    expect(kinds).toContain('run.settled');
  });

  it('cancels a causal tree from its root', async () => {
    // No runner is registered here: a sandbox run could never execute, so it is refused before admission.
    const none = await call(app, 'POST', '/runs', {
      body: { kind: 'sandbox', subject: { image: 'alpine:3.20' } },
    });
    expect(none.status, JSON.stringify(none.body)).toBe(422);
    expect(none.body).toMatchObject({
      code: 'no_placement',
      details: { kind: 'sandbox', placement: { where: 'driver' } },
    });
    // Analysis runs that sleep: still running (or queued) when the root is cancelled.
    const sandbox = { kind: 'analysis', subject: { config: { fn: 'sleep', ms: 20_000 } } };
    const root = await call(app, 'POST', '/runs', { body: sandbox });
    expect(root.status, JSON.stringify(root.body)).toBe(201);
    const rootId = (root.body.run as { id: string }).id;
    const child = await call(app, 'POST', '/runs', {
      body: sandbox,
      headers: { 'x-everdict-caused-by': rootId },
    });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    const childRun = child.body.run as { id: string; origin: { cause: string; causedByRunId: string } };
    expect(childRun.origin).toMatchObject({ cause: 'run', causedByRunId: rootId });
    const grandchild = await call(app, 'POST', '/runs', {
      body: sandbox,
      headers: { 'x-everdict-caused-by': childRun.id },
    });
    const grandchildId = (grandchild.body.run as { id: string }).id;
    const tree = await call(app, 'GET', `/runs?causedBy=${rootId}`);
    expect((tree.body.items as { id: string }[]).map((r) => r.id)).toEqual([childRun.id]);
    const cancelled = await call(app, 'POST', `/runs/${rootId}/cancel`, { body: { reason: 'quickstart' } });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect((cancelled.body.cancelled as string[]).sort()).toEqual([rootId, childRun.id, grandchildId].sort());
    expect((await call(app, 'GET', `/runs/${grandchildId}`)).body.status).toBe('cancelled');
    const twice = await call(app, 'POST', `/runs/${rootId}/cancel`);
    expect(twice.status).toBe(409);
  });

  it("scopes by tenant: another tenant's run is a 404", async () => {
    const t = await call(app, 'POST', '/tenants', { body: { id: 'acme' } });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const acme = String((t.body.key as { key: string }).key);
    const r = await call(app, 'GET', `/runs/${runIds[0]}`, { key: acme });
    expect(r.status).toBe(404);
    expect(r.type).toBe('application/problem+json');
    // Its verdicts too (the run was scored above): nothing of it shows.
    const verdicts = await call(app, 'GET', `/runs/${runIds[0]}/scores`, { key: acme });
    expect(verdicts.status).toBe(404);
    expect(verdicts.body.code).toBe('not_found');
    const keys = await call(app, 'POST', '/api-keys', { key: acme, body: { role: 'member', label: 'ci' } });
    expect(keys.status).toBe(201);
    const member = String(keys.body.key);
    expect((await call(app, 'POST', '/api-keys', { key: member, body: {} })).status).toBe(403);
    expect((await call(app, 'GET', '/runs', { key: member })).status).toBe(200);
    // Creating tenants is the operator's (tenant `default`'s admins): acme's admin is refused, nothing made.
    const foreign = await call(app, 'POST', '/tenants', { key: acme, body: { id: 'acme-child' } });
    expect(foreign.status).toBe(403);
    expect(foreign.body.code).toBe('forbidden');
    const again = await call(app, 'POST', '/tenants', { body: { id: 'acme-child' } });
    expect(again.status).toBe(201);
  });

  it('subscriptions: an event selector and a schedule', async () => {
    const sub = await call(app, 'POST', '/subscriptions', {
      body: {
        name: 'on-settle',
        selector: { kind: 'run.settled', filter: { outcome: 'failed' } },
        runSpec: { kind: 'analysis', subject: { config: { fn: 'echo', message: 'a run failed' } } },
      },
    });
    expect(sub.status, JSON.stringify(sub.body)).toBe(201);
    const nightly = await call(app, 'POST', '/subscriptions', {
      body: {
        name: 'nightly',
        schedule: { cron: '0 3 * * *' },
        runSpec: { kind: 'analysis', subject: { config: { fn: 'count_runs' } } },
      },
    });
    expect(nightly.status, JSON.stringify(nightly.body)).toBe(201);
    const listed = await call(app, 'GET', '/subscriptions');
    expect((listed.body.items as unknown[]).length).toBe(2);
    const off = await call(app, 'PATCH', `/subscriptions/${String(sub.body.id)}`, {
      body: { enabled: false },
    });
    expect(off.body.enabled).toBe(false);
    expect((await call(app, 'DELETE', `/subscriptions/${String(nightly.body.id)}`)).status).toBe(204);
  });

  it('documents the grader union and the scoring in /openapi.json', async () => {
    const doc = await call(app, 'GET', '/openapi.json', { key: null });
    const text = JSON.stringify(doc.body);
    for (const t of ['exit_code', 'output_regex', 'json_field_equals', 'numeric_threshold', 'judge'])
      expect(text).toContain(`"${t}"`);
    const schemas = (doc.body.components as { schemas: Record<string, unknown> }).schemas;
    expect(Object.keys(schemas)).toEqual(expect.arrayContaining(['Score', 'Scoring']));
    expect(JSON.stringify(schemas.Scoring)).toContain('skippedRunIds');
  });

  it('healthz and metrics', async () => {
    expect((await call(app, 'GET', '/healthz', { key: null })).body).toMatchObject({
      status: 'ok',
      database: 'pglite',
    });
    const m = await (await app.request('/metrics')).text();
    expect(m).toMatch(/everdict_admissions_total\{outcome="admitted",kind="analysis"/);
  });
});
