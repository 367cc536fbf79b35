// run-model's refusals of a transition, answered by whose fault they are: a malformed event (the caller's
// input) is the schema refusal every 400 with issues is (validation_failed, in the edge's shape); a state the event does not fit is 409 conflict; this replica's clock behind
// the run's last update is 409 conflict `clock_behind` (not the caller's fault, not a 500). Every refusal
// leaves the run, its record, its events and its admission slot as they were. On PGlite.
import type { RunEvent } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { errorToProblem, ProblemSchema } from '../http/problem.js';
import { COMMAND_SPEC, call, type TestApp, testApp } from '../http/testing/harness.js';
import type { Deps } from './context.js';
import { transitionTx } from './lifecycle.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
});
afterAll(async () => {
  await t.close();
});

const TENANT = 'default';

async function created(): Promise<string> {
  const r = await call(t.app, 'POST', '/runs', { body: COMMAND_SPEC });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return (r.body.run as { id: string }).id;
}

/** Everything a transition writes for a run: its row, its record, its events, its admission slot. */
async function stateOf(runId: string) {
  const db = t.core.internals.deps.db;
  return {
    run: await db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow(),
    segments: await db.selectFrom('record_segments').selectAll().where('run_id', '=', runId).execute(),
    events: await db.selectFrom('events').select(['id', 'kind']).where('run_id', '=', runId).execute(),
    slot: await db
      .selectFrom('adm_slots')
      .selectAll()
      .where('tenant', '=', TENANT)
      .where('run_id', '=', runId)
      .executeTakeFirst(),
  };
}

/** The refusal a transition throws (null if it was applied). */
async function refusal(runId: string, event: RunEvent, deps: Deps = t.core.internals.deps) {
  return withTx(deps.db, (tx) => transitionTx(tx, deps, TENANT, runId, event)).then(
    () => null,
    (e: unknown) => e,
  );
}

describe('a transition run-model refuses is answered by whose fault it is, and changes nothing', () => {
  it("a fail whose error is malformed (the caller's input): 400 validation_failed, the edge's shape", async () => {
    const id = await created();
    const before = await stateOf(id);
    const malformed = { type: 'fail', error: { code: '', message: 'x', extra: 1 } } as unknown as RunEvent;
    const e = await refusal(id, malformed);
    expect(e).toBeInstanceOf(ControlPlaneError);
    const err = e as ControlPlaneError;
    expect({ code: err.code, status: err.httpStatus }).toEqual({ code: 'validation_failed', status: 400 });
    const mapped = errorToProblem(e);
    expect(mapped.unexpected).toBe(false);
    const p = mapped.problem;
    // What the client reads: top-level issues with array paths (no `details`), a detail naming the first.
    expect(ProblemSchema.safeParse(p).success).toBe(true);
    expect(Object.keys(p).sort()).toEqual(['code', 'detail', 'issues', 'status', 'title', 'type']);
    expect(p).toMatchObject({ status: 400, code: 'validation_failed' });
    expect(p.issues).toContainEqual(expect.objectContaining({ path: ['error', 'code'] }));
    expect(p.detail).toMatch(/^field "error\.(code|extra)": /);
    expect(await stateOf(id)).toEqual(before);
  });

  it("this replica's clock behind the run's last update: 409 conflict clock_behind, not 400, not 500", async () => {
    const id = await created();
    const before = await stateOf(id);
    const deps = t.core.internals.deps;
    const behind: Deps = { ...deps, clock: () => new Date(Number(before.run.updated_at) - 60_000) };
    const e = await refusal(id, { type: 'cancel' }, behind);
    expect(e).toBeInstanceOf(ControlPlaneError);
    const err = e as ControlPlaneError;
    expect({ code: err.code, status: err.httpStatus, reason: err.details.reason }).toEqual({
      code: 'conflict',
      status: 409,
      reason: 'clock_behind',
    });
    const mapped = errorToProblem(e);
    expect(mapped).toMatchObject({ unexpected: false, problem: { status: 409, code: 'conflict' } });
    expect(await stateOf(id)).toEqual(before);
    expect(await refusal(id, { type: 'cancel' })).toBeNull(); // the same cancel on time is applied
  });

  it('a state the event does not fit stays 409 conflict (already_terminal, illegal_transition)', async () => {
    const id = await created();
    const illegal = await refusal(id, { type: 'succeed' }); // only a running run succeeds
    expect(illegal).toMatchObject({
      code: 'conflict',
      httpStatus: 409,
      details: { reason: 'illegal_transition' },
    });
    expect(await refusal(id, { type: 'cancel' })).toBeNull();
    const settled = await stateOf(id);
    const terminal = await refusal(id, { type: 'fail', error: { code: 'late', message: 'too late' } });
    expect(terminal).toMatchObject({
      code: 'conflict',
      httpStatus: 409,
      details: { reason: 'already_terminal' },
    });
    expect(await stateOf(id)).toEqual(settled);
  });
});
