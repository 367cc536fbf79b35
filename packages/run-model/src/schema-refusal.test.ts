// Every refusal of input that failed a schema carries zod's issues as zod reported them (`RunModelError.issues`:
// codes, paths as segments, a bound's members), so a caller can answer its client with the real codes and name
// the field it sent — a malformed status-machine event, a bad run spec, an invalid group, a grader list, a
// session lifetime, and a session expiry past its bound (a custom issue naming itself out_of_range).
import { describe, expect, it } from 'vitest';
import { at, runIn, SPECS, T0 } from '../test/fixtures.js';
import {
  applyGraders,
  createGroup,
  createRun,
  MAX_SESSION_TTL_SEC,
  type RunEvent,
  RunModelError,
  sessionDeadlines,
  transition,
} from './index.js';

const ctx = { id: 'run_s', tenant: 't_1', createdBy: 'u_1', now: at(0) };

function refusal(fn: () => unknown): RunModelError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(RunModelError);
  expect((caught as RunModelError).code).toBe('invalid_input');
  return caught as RunModelError;
}

describe('a schema refusal keeps zod’s issues', () => {
  it('a malformed status-machine event: the codes and segment paths of its fields', () => {
    const malformed = { type: 'fail', error: { code: '', message: 'x', extra: 1 } } as unknown as RunEvent;
    const r = transition(runIn('running'), malformed, at(5));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('invalid_input');
    expect(r.error.details).toEqual({ runId: 'run_1', event: 'fail' });
    expect(r.error.issues).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'too_small', path: ['error', 'code'], origin: 'string' }),
        expect.objectContaining({ code: 'unrecognized_keys', path: ['error'], keys: ['extra'] }),
      ]),
    );
  });

  it('a clock behind the run is no schema refusal: no issues', () => {
    const r = transition(runIn('running'), { type: 'succeed' }, '2025-01-01T00:00:00Z');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('invalid_input');
    expect(r.error.issues).toBeUndefined();
    expect(r.error.details).toHaveProperty('updatedAt');
  });

  it('a bad run spec and an invalid group: zod’s codes at their fields', () => {
    const spec = refusal(() => createRun({ ...SPECS.eval, placement: { where: 'moon' } } as never, ctx));
    expect(spec.issues).toContainEqual(
      expect.objectContaining({ code: 'invalid_value', path: ['placement', 'where'] }),
    );
    const group = refusal(() =>
      createGroup({ id: 'g_1', tenant: 't_1', kind: 'nope' as never, label: '', createdBy: 'u_1', now: T0 }),
    );
    expect(group.issues).toEqual([expect.objectContaining({ code: 'invalid_value', path: ['kind'] })]);
  });

  it('a grader list and a session lifetime: indexes stay numbers, bounds stay bounds', () => {
    const graders = refusal(() =>
      applyGraders({
        group: createGroup({
          id: 'g_1',
          tenant: 't_1',
          kind: 'experiment',
          label: '',
          createdBy: 'u',
          now: T0,
        }),
        runs: [],
        graders: [{ type: 'exit_code' }, { type: 'nope' }] as never,
        ids: () => 'id',
        now: T0,
      }),
    );
    expect(graders.issues).toEqual([expect.objectContaining({ code: 'invalid_union', path: [1, 'type'] })]);
    const life = refusal(() => sessionDeadlines({ ttlSec: MAX_SESSION_TTL_SEC + 1, idleTimeoutSec: 1 }, T0));
    expect(life.issues).toEqual([
      expect.objectContaining({
        code: 'too_big',
        path: ['ttlSec'],
        origin: 'number',
        maximum: MAX_SESSION_TTL_SEC,
      }),
    ]);
  });

  it('a session expiry past MAX_SESSION_TTL_SEC: a custom issue at expiresAt naming itself out_of_range', () => {
    const e = refusal(() => createRun({ ...SPECS.sandbox, expiresAt: at(MAX_SESSION_TTL_SEC + 1) }, ctx));
    expect(e.issues).toEqual([
      {
        code: 'custom',
        path: ['expiresAt'],
        message: `a session is held open at most ${MAX_SESSION_TTL_SEC} seconds (366 days)`,
        params: { code: 'out_of_range', maximum: MAX_SESSION_TTL_SEC },
      },
    ]);
    expect(e.message).toBe(`invalid run spec: expiresAt ${e.issues?.[0]?.message}`);
    expect(e.details).toEqual({
      expiresAt: at(MAX_SESSION_TTL_SEC + 1),
      maxSessionTtlSec: MAX_SESSION_TTL_SEC,
    });
  });
});
