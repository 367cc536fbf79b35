// Evidence under a verdict is never deleted, also when retention runs while a score is being made: a judge
// grader can take seconds between the read of the imported trajectory and the score's insert. Either the
// score is recorded and retention keeps the trajectory, or retention deleted it first and the score is
// refused (trajectory_deleted) — never a score left on a deleted trajectory. And a pass that fails midway
// has recorded every deletion it made, and goes on with the other tenants.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Judge, JudgeVerdict } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isControlPlaneError } from '../errors.js';
import { call, type TestApp, testApp } from '../http/testing/harness.js';
import { agentTrace, otlpJson } from './otlp-fixtures.js';
import { TrajectoryService } from './service.js';

const DAY = 86_400_000;
let now = new Date('2026-12-01T00:00:00.000Z');
let t: TestApp;

beforeAll(async () => {
  t = await testApp({ clock: () => now });
}, 300_000);
afterAll(() => t.close(), 60_000);

/** A judge whose verdict waits until the test releases it (and says when it was asked). */
function heldJudge() {
  let release!: (v: JudgeVerdict) => void;
  let asked!: () => void;
  const wasAsked = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const judge: Judge = {
    grade: () => {
      asked();
      return new Promise<JudgeVerdict>((resolve) => {
        release = resolve;
      });
    },
  };
  return { judge, wasAsked, release: (v: JudgeVerdict) => release(v) };
}

describe('retention while a score is being made', { timeout: 300_000 }, () => {
  it('never leaves a score on a trajectory it deleted', async () => {
    const traceId = 'e7'.repeat(16);
    expect((await call(t.app, 'POST', '/v1/traces', { body: otlpJson(agentTrace(traceId)) })).status).toBe(
      200,
    );
    const list = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
    const id = (list.body.items as { trajectoryId: string }[])[0]!.trajectoryId;
    expect(
      (await call(t.app, 'PUT', '/trajectory-policy', { body: { trajectoryRetentionDays: 7 } })).status,
    ).toBe(200);

    const held = heldJudge();
    const core = t.core;
    const service = new TrajectoryService(core.internals.deps, core.trajectories!, held.judge);
    const principal = await core.services.auth.authenticate((await t.key('admin')) as string);
    const scoring = service
      .score(principal, id, { graders: [{ type: 'judge', name: 'quality', judgeId: 'j1' }] })
      .then(
        (r) => ({ ok: true as const, scores: r.scores.length }),
        (e: unknown) => ({ ok: false as const, code: isControlPlaneError(e) ? e.code : String(e) }),
      );
    await held.wasAsked; // the trajectory was read and graded; the verdict is pending

    now = new Date(now.getTime() + 8 * DAY);
    const deleted = await core.trajectoryJobs!.retain();
    held.release({ value: 1, passed: true, detail: 'fine' });
    const outcome = await scoring;

    const rows = await core.internals.deps.db
      .selectFrom('trajectory_scores')
      .select('id')
      .where('trajectory_id', '=', id)
      .execute();
    const gone = deleted.some((d) => d.trajectoryId === id);
    // The verdict was still pending when retention ran: the trajectory went, and the score was refused.
    expect(gone).toBe(true);
    expect(outcome).toEqual({ ok: false, code: 'trajectory_deleted' });
    expect(rows).toEqual([]);
    expect((await call(t.app, 'GET', `/trajectories/${id}`)).body.code).toBe('trajectory_deleted');
  });

  it('keeps a trajectory whose score was recorded before retention decided', async () => {
    const traceId = 'e8'.repeat(16);
    expect((await call(t.app, 'POST', '/v1/traces', { body: otlpJson(agentTrace(traceId)) })).status).toBe(
      200,
    );
    const list = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`);
    const id = (list.body.items as { trajectoryId: string }[])[0]!.trajectoryId;
    const scored = await call(t.app, 'POST', `/trajectories/${id}/score`, {
      body: { graders: [{ type: 'output_contains', text: 'pass' }] },
    });
    expect(scored.status).toBe(200);
    now = new Date(now.getTime() + 30 * DAY);
    expect((await t.core.trajectoryJobs!.retain()).map((d) => d.trajectoryId)).not.toContain(id);
    expect((await call(t.app, 'GET', `/trajectories/${id}`)).status).toBe(200);
  });
});

describe('a retention pass that fails midway', { timeout: 300_000 }, () => {
  async function importFor(key: string, traceId: string): Promise<string> {
    const body = otlpJson(agentTrace(traceId));
    expect((await call(t.app, 'POST', '/v1/traces', { key, body })).status).toBe(200);
    const list = await call(t.app, 'GET', `/trajectories?source=otlp&externalId=${traceId}`, { key });
    return (list.body.items as { trajectoryId: string }[])[0]!.trajectoryId;
  }

  it('has recorded the deletions it made, and the next tenant still gets its pass', async () => {
    const a = await t.tenant('retention-a');
    const b = await t.tenant('retention-b');
    const [first, failing] = [
      await importFor(a, 'a1'.repeat(16)),
      await importFor(a, 'a2'.repeat(16)),
    ].sort();
    const other = await importFor(b, 'b1'.repeat(16));
    for (const key of [a, b])
      expect(
        (await call(t.app, 'PUT', '/trajectory-policy', { key, body: { trajectoryRetentionDays: 7 } }))
          .status,
      ).toBe(200);
    // The tombstone of the second cannot be written: a directory stands where it goes.
    const { root } = t.core.trajectories!.store.backend as unknown as { root: string };
    const obstacle = path.join(root, 'tenants', 'retention-a', 'trajectories', failing!, 'deleted.json');
    mkdirSync(obstacle, { recursive: true });
    writeFileSync(path.join(obstacle, 'x'), 'x');

    now = new Date(now.getTime() + 8 * DAY);
    const deleted = await t.core.trajectoryJobs!.retain();
    expect(deleted.map((d) => d.trajectoryId).sort()).toEqual([first, other].sort());
    for (const [key, id] of [
      [a, first],
      [b, other],
    ] as const) {
      const log = await call(t.app, 'GET', '/trajectory-deletions', { key });
      expect((log.body.items as { trajectoryId: string }[]).map((i) => i.trajectoryId)).toEqual([id]);
    }
    // The one whose deletion failed is still there (the obstacle keeps it from reading: a storage failure).
    const object = path.join(path.dirname(obstacle), 'trajectory.jsonl.gz');
    expect(existsSync(object)).toBe(true);
  });
});
