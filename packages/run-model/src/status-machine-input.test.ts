// The status machine against what callers may really hand it: malformed events and clocks (never a run
// `Run` would refuse), and the attempt count a lost executor's requeue reports.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at, deepFreeze, runIn, SPECS } from '../test/fixtures.js';
import {
  applyTransition,
  RUN_EVENT_TYPES,
  RUN_STATUSES,
  Run,
  type RunEvent,
  RunFact,
  RunModelError,
  transition,
} from './index.js';

const VALID: Record<(typeof RUN_EVENT_TYPES)[number], RunEvent> = {
  start: { type: 'start' },
  await_input: { type: 'await_input', reason: 'approve' },
  resume_input: { type: 'resume_input' },
  succeed: { type: 'succeed' },
  fail: { type: 'fail', error: { code: 'boom', message: 'broke' } },
  cancel: { type: 'cancel' },
  requeue: { type: 'requeue', cause: 'executor_lost' },
};

/** Events as a caller may build them: valid ones, and the same types with junk payloads. */
const anyEvent: fc.Arbitrary<RunEvent> = fc.oneof(
  fc.constantFrom(...RUN_EVENT_TYPES).map((t) => VALID[t]),
  fc
    .record({
      type: fc.constantFrom(...RUN_EVENT_TYPES),
      error: fc.oneof(
        fc.constant(undefined),
        fc.record({ code: fc.string({ maxLength: 2 }), message: fc.oneof(fc.string(), fc.integer()) }),
        fc.anything(),
      ),
      reason: fc.oneof(fc.constant(undefined), fc.string(), fc.integer()),
      cause: fc.oneof(fc.constant('executor_lost'), fc.string()),
      extra: fc.oneof(fc.constant(undefined), fc.anything()),
    })
    .map((r) => {
      const e: Record<string, unknown> = { type: r.type };
      for (const [k, v] of Object.entries(r)) if (v !== undefined) e[k] = v;
      return e as unknown as RunEvent;
    }),
);

/** Clocks as a caller may pass them: valid ISO instants after the fixture's, and strings Date.parse still reads. */
const anyNow = fc.oneof(
  fc.integer({ min: 10, max: 10_000 }).map(at),
  fc.constantFrom(
    '2026-06-01',
    'Mon, 01 Jun 2026 00:00:00 GMT',
    '2026-06-01T00:00:00',
    '2026-06-01 00:00:00Z',
  ),
  fc.string(),
);

describe('property: a transition never yields a run that Run refuses', () => {
  it('any event payload and any clock: ok ⇒ the run and its facts parse; refused ⇒ typed, input untouched', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...RUN_STATUSES),
        fc.constantFrom(...(Object.keys(SPECS) as (keyof typeof SPECS)[])),
        fc.array(fc.tuple(anyEvent, anyNow), { maxLength: 20 }),
        (status, kind, steps) => {
          let run = deepFreeze(runIn(status, SPECS[kind]));
          for (const [event, now] of steps) {
            const before = structuredClone(run);
            const result = transition(run, event, now);
            expect(run).toEqual(before);
            if (!result.ok) {
              expect(result.error).toBeInstanceOf(RunModelError);
              expect(['invalid_input', 'illegal_transition', 'already_terminal']).toContain(
                result.error.code,
              );
              continue;
            }
            const reparsed = Run.safeParse(result.run);
            expect(reparsed.success, JSON.stringify(reparsed.error?.issues)).toBe(true);
            for (const f of result.facts) expect(RunFact.safeParse(f).success).toBe(true);
            run = deepFreeze(result.run);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('a fail with a malformed error, or a date-only clock, is invalid_input (400) and changes nothing', () => {
    const running = runIn('running');
    const bad = transition(running, { type: 'fail', error: { code: '', message: 'x' } }, at(50));
    expect(!bad.ok && [bad.error.code, bad.error.httpStatus]).toEqual(['invalid_input', 400]);
    const dateOnly = transition(running, { type: 'succeed' }, '2026-06-01');
    expect(!dateOnly.ok && dateOnly.error.code).toBe('invalid_input');
  });
});

describe('attempts: each start counts one, and a requeue reports the attempt it lost', () => {
  it('start → requeue → start → requeue reports attempts 1 then 2; the third start is attempt 3', () => {
    let run = runIn('queued');
    const lost: number[] = [];
    let clock = 10;
    for (let i = 0; i < 2; i++) {
      run = applyTransition(run, { type: 'start' }, at(clock++)).run;
      expect(run.attempt).toBe(i + 1);
      const requeued = applyTransition(run, { type: 'requeue', cause: 'executor_lost' }, at(clock++));
      const fact = requeued.facts[0];
      if (fact?.type === 'run.requeued') lost.push(fact.attempt);
      run = requeued.run;
    }
    expect(lost).toEqual([1, 2]);
    const third = applyTransition(run, { type: 'start' }, at(clock));
    expect(third.patch.attempt).toBe(3);
    expect(third.run.attempt).toBe(3);
  });
  it('resuming a parked run is not a new attempt', () => {
    const parked = runIn('awaiting_input');
    expect(applyTransition(parked, { type: 'resume_input' }, at(50)).run.attempt).toBe(parked.attempt);
  });
});
