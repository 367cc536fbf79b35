// A grader list the trajectory service refuses (POST /trajectories/:id/score parses `graders` again, for any
// caller) answers exactly as the edge's validator answers the same body: one mapping (services/boundary.ts
// `validationRefusal`), top-level `issues` of `{code, path, message, in}` naming the body field `graders.…`,
// a `detail` naming the first, no `details`. On the real core (PGlite), through the HTTP app's own rendering.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlaneError } from '../errors.js';
import { errorToProblem, ProblemSchema } from '../http/problem.js';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

/** A list with two faults: an exit code that is no integer, a grader type nobody knows. */
const BAD_GRADERS = [{ type: 'exit_code', expected: 1.5 }, { type: 'nope' }];

describe('a trajectory score the service refuses', { timeout: 120_000 }, () => {
  it('answers with the edge’s body for the same graders: validation_failed, body field graders.…', async () => {
    const edge = await call(t.app, 'POST', '/trajectories/trj_unknown/score', {
      body: { graders: BAD_GRADERS },
    });
    expect(edge.status, JSON.stringify(edge.body)).toBe(400);
    expect(edge.body.code).toBe('validation_failed');

    const service = t.core.trajectoryService;
    if (service === null) throw new Error('the test core has a trajectory store');
    const principal = await t.core.services.auth.authenticate(ADMIN_KEY);
    const thrown = await service.score(principal, 'trj_unknown', { graders: BAD_GRADERS }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(ControlPlaneError);
    const mapped = errorToProblem(thrown);
    expect(mapped.unexpected).toBe(false);
    const body = JSON.parse(JSON.stringify(mapped.problem)) as Record<string, unknown>;
    expect(ProblemSchema.safeParse(body).success).toBe(true);
    expect(body).toEqual(edge.body);
    expect(body).not.toHaveProperty('details');
    expect(body.issues).toEqual([
      expect.objectContaining({ code: 'invalid_type', path: ['graders', 0, 'expected'], in: 'body' }),
      expect.objectContaining({ code: 'invalid_union', path: ['graders', 1, 'type'], in: 'body' }),
    ]);
    expect(body.detail).toMatch(/^body field "graders\.0\.expected": .* \(and 1 more: see issues\)$/);
  });
});
