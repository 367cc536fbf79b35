// Retention on the real core with fake time: a tenant's `trajectoryRetentionDays` deletes sealed
// trajectories older than N days — never evidence (one a run record names, one that carries scores) —
// and each deletion is recorded (GET /trajectory-deletions) and answers `trajectory_deleted` afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { agentTrace, otlpJson } from './otlp-fixtures.js';

const DAY = 86_400_000;
let now = new Date('2026-12-01T00:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  t = await testApp({ clock: () => now });
}, 300_000);
afterAll(() => t.close(), 60_000);

async function importTrace(traceId: string): Promise<string> {
  const r = await call(t.app, 'POST', '/v1/traces', { body: otlpJson(agentTrace(traceId)) });
  expect(r.status).toBe(200);
  const list = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
  return (list.body.items as { trajectoryId: string }[])[0]!.trajectoryId;
}

describe('trajectory retention', { timeout: 300_000 }, () => {
  it('is an admin policy; members read it', async () => {
    const member = await t.key('member');
    expect((await call(t.app, 'GET', '/trajectory-policy', { key: member })).body).toEqual({
      trajectoryRetentionDays: null,
    });
    const refused = await call(t.app, 'PUT', '/trajectory-policy', {
      key: member,
      body: { trajectoryRetentionDays: 7 },
    });
    expect(refused.status).toBe(403);
    const bad = await call(t.app, 'PUT', '/trajectory-policy', { body: { trajectoryRetentionDays: 0 } });
    expect(bad.status).toBe(400);
    expect((await call(t.app, 'GET', '/trajectory-policy')).body).toEqual({ trajectoryRetentionDays: null });
  });

  it('deletes expired sealed trajectories except evidence, and records each deletion', async () => {
    const plain = await importTrace('c'.repeat(32));
    const scored = await importTrace('d'.repeat(32));
    const s = await call(t.app, 'POST', `/trajectories/${scored}/score`, {
      body: { graders: [{ type: 'output_contains', text: 'pass' }] },
    });
    expect(s.status).toBe(200);
    // A run's own trajectory, sealed at its end: its run record names it.
    const run = await call(t.app, 'POST', '/runs', {
      body: { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } },
    });
    const runId = (run.body.run as { id: string }).id;
    await t.core.trajectories!.append('default', runId, [
      { type: 'log', seq: 1, ts: now.toISOString(), runId, level: 'info', message: 'hi' },
    ]);
    await call(t.app, 'POST', `/runs/${runId}/cancel`);
    await t.core.trajectoryJobs!.sealDue();
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.trajectory).toBeDefined();

    expect(
      (await call(t.app, 'PUT', '/trajectory-policy', { body: { trajectoryRetentionDays: 7 } })).body,
    ).toEqual({
      trajectoryRetentionDays: 7,
    });
    // Within the retention period nothing goes.
    now = new Date(now.getTime() + 6 * DAY);
    expect(await t.core.trajectoryJobs!.retain()).toEqual([]);

    now = new Date(now.getTime() + 2 * DAY);
    const deleted = await t.core.trajectoryJobs!.retain();
    expect(deleted.map((d) => d.trajectoryId)).toEqual([plain]);
    expect(deleted[0]).toMatchObject({ reason: 'retention', retentionDays: 7, deletedAt: now.toISOString() });

    const log = await call(t.app, 'GET', '/trajectory-deletions');
    expect(log.status).toBe(200);
    const items = log.body.items as { trajectoryId: string; reason: string; deletedAt: string }[];
    expect(items.map((i) => [i.trajectoryId, i.reason, i.deletedAt])).toEqual([
      [plain, 'retention', now.toISOString()],
    ]);
    const gone = await call(t.app, 'GET', `/trajectories/${plain}`);
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('trajectory_deleted');
    expect((await call(t.app, 'GET', `/trajectories/${scored}`)).status).toBe(200);
    expect((await call(t.app, 'GET', `/runs/${runId}/trajectory`)).status).toBe(200);

    // A second pass (another replica, a retry) deletes and records nothing twice.
    now = new Date(now.getTime() + 30 * DAY);
    expect(await t.core.trajectoryJobs!.retain()).toEqual([]);
    expect(((await call(t.app, 'GET', '/trajectory-deletions')).body.items as unknown[]).length).toBe(1);
    // Counted once on /metrics, as retention deleted it.
    expect(await (await t.app.request('/metrics')).text()).toContain(
      'everdict_storage_deleted_total{what="trajectory"} 1\n',
    );
    // Another tenant sees none of it.
    const other = await t.tenant('elsewhere');
    expect((await call(t.app, 'GET', '/trajectory-deletions', { key: other })).body.items).toEqual([]);
  });
});
