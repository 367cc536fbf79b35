import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at, deepFreeze, runIn, SPECS } from '../test/fixtures.js';
import {
  applyTransition,
  health,
  isHeldOpen,
  isTerminal,
  legalEvents,
  nextStatus,
  RUN_EVENT_TYPES,
  RUN_STATUSES,
  Run,
  type RunEvent,
  type RunEventType,
  RunFact,
  RunModelError,
  TERMINAL_STATUSES,
  TRANSITIONS,
  transition,
} from './index.js';

const EVENTS: Record<RunEventType, RunEvent> = {
  start: { type: 'start' },
  await_input: { type: 'await_input', reason: 'approve write_file' },
  resume_input: { type: 'resume_input' },
  succeed: { type: 'succeed' },
  fail: { type: 'fail', error: { code: 'boom', message: 'it broke', retryable: true } },
  cancel: { type: 'cancel', reason: 'changed my mind' },
  requeue: { type: 'requeue', cause: 'executor_lost' },
};

describe('the transition table', () => {
  it('lists each (from, event) pair once', () => {
    const keys = TRANSITIONS.map((t) => `${t.from}:${t.event}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
  it('never leaves a terminal status, and every status is reachable from queued', () => {
    for (const t of TRANSITIONS) expect(isTerminal(t.from)).toBe(false);
    const reach = new Set<string>(['queued']);
    for (let i = 0; i < 4; i++) for (const t of TRANSITIONS) if (reach.has(t.from)) reach.add(t.to);
    expect([...reach].sort()).toEqual([...RUN_STATUSES].sort());
  });
  it('legalEvents is the table read by row', () => {
    expect(legalEvents('queued').sort()).toEqual(['cancel', 'fail', 'start']);
    expect(legalEvents('running').sort()).toEqual(['await_input', 'cancel', 'fail', 'requeue', 'succeed']);
    expect(legalEvents('awaiting_input').sort()).toEqual(['cancel', 'fail', 'resume_input']);
    for (const s of TERMINAL_STATUSES) expect(legalEvents(s)).toEqual([]);
  });
});

describe('every legal transition', () => {
  for (const t of TRANSITIONS) {
    it(`${t.from} --${t.event}--> ${t.to}`, () => {
      const run = deepFreeze(runIn(t.from));
      const before = structuredClone(run);
      const now = at(100);
      const result = transition(run, EVENTS[t.event], now);
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      expect(run).toEqual(before);
      expect(result.run).not.toBe(run);
      expect(result.run.status).toBe(t.to);
      const { startedAt: _lostStart, ...requeued } = { ...run, ...result.patch };
      // A requeued run waits again: the lost attempt's start is not its start.
      expect(result.run).toEqual(t.event === 'requeue' ? requeued : { ...run, ...result.patch });
      expect(result.patch.updatedAt).toBe(now);
      expect(Run.safeParse(result.run).success).toBe(true);
      expect(result.facts).toHaveLength(1);
      const fact = RunFact.parse(result.facts[0]);
      expect(fact).toMatchObject({ runId: run.id, tenant: run.tenant, kind: run.kind, at: now });
      const expected = {
        start: 'run.started',
        await_input: 'run.awaiting_input',
        resume_input: 'run.resumed',
        succeed: 'run.settled',
        fail: 'run.settled',
        cancel: 'run.settled',
        requeue: 'run.requeued',
      }[t.event];
      expect(fact.type).toBe(expected);
      if (fact.type === 'run.settled') {
        expect(fact.outcome).toBe(t.to);
        expect(result.patch.settledAt).toBe(now);
      }
    });
  }

  it('start stamps startedAt once; resume keeps it', () => {
    const parked = runIn('awaiting_input');
    const resumed = applyTransition(parked, EVENTS.resume_input, at(50));
    expect(resumed.run.startedAt).toBe(parked.startedAt);
    expect(resumed.patch.startedAt).toBeUndefined();
  });
  it('fail records the error on the run and the fact; cancel carries its reason on the fact', () => {
    const failed = applyTransition(runIn('running'), EVENTS.fail, at(9));
    expect(failed.run.error).toEqual({ code: 'boom', message: 'it broke', retryable: true });
    expect(failed.facts[0]).toMatchObject({ outcome: 'failed', error: failed.run.error });
    const cancelled = applyTransition(runIn('queued'), EVENTS.cancel, at(9));
    expect(cancelled.facts[0]).toMatchObject({ outcome: 'cancelled', reason: 'changed my mind' });
    expect(cancelled.run.startedAt).toBeUndefined();
  });
  it('await_input carries its reason', () => {
    expect(applyTransition(runIn('running'), EVENTS.await_input, at(9)).facts[0]).toMatchObject({
      type: 'run.awaiting_input',
      reason: 'approve write_file',
    });
  });
});

describe('every illegal transition', () => {
  for (const from of RUN_STATUSES) {
    for (const event of RUN_EVENT_TYPES) {
      if (nextStatus(from, event) !== undefined) continue;
      const code = isTerminal(from) ? 'already_terminal' : 'illegal_transition';
      it(`${from} --${event}--> ${code}`, () => {
        const run = deepFreeze(runIn(from));
        const before = structuredClone(run);
        const result = transition(run, EVENTS[event], at(100));
        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect(result.error).toBeInstanceOf(RunModelError);
        expect(result.error.code).toBe(code);
        expect(result.error.httpStatus).toBe(409);
        expect(result.error.details).toEqual({ runId: run.id, status: from, event });
        expect(run).toEqual(before);
      });
    }
  }
  it('a second settle is a typed conflict', () => {
    const done = applyTransition(runIn('running'), EVENTS.succeed, at(5)).run;
    expect(() => applyTransition(done, EVENTS.fail, at(6))).toThrow(
      expect.objectContaining({ code: 'already_terminal', httpStatus: 409 }),
    );
  });
  it('a clock running backwards is invalid input, not a transition', () => {
    const result = transition(runIn('running'), EVENTS.succeed, at(0));
    expect(!result.ok && result.error.code).toBe('invalid_input');
  });
});

describe('property: random event sequences from any state', () => {
  const event = fc.constantFrom(...RUN_EVENT_TYPES).map((t) => EVENTS[t]);
  const status = fc.constantFrom(...RUN_STATUSES);
  const kind = fc.constantFrom(...(Object.keys(SPECS) as (keyof typeof SPECS)[]));

  it('only listed transitions succeed, terminal absorbs, refusals leave the input untouched', () => {
    fc.assert(
      fc.property(status, kind, fc.array(event, { maxLength: 30 }), (start, k, events) => {
        let run = deepFreeze(runIn(start, SPECS[k]));
        let clock = 10;
        let settled = isTerminal(run);
        for (const e of events) {
          clock += 1;
          const before = structuredClone(run);
          const to = nextStatus(run.status, e.type);
          const result = transition(run, e, at(clock));
          expect(run).toEqual(before);
          if (to === undefined) {
            expect(result.ok).toBe(false);
            if (!result.ok)
              expect(result.error.code).toBe(isTerminal(run) ? 'already_terminal' : 'illegal_transition');
            continue;
          }
          expect(settled).toBe(false);
          expect(result.ok).toBe(true);
          if (!result.ok) continue;
          expect(result.run.status).toBe(to);
          expect(Run.safeParse(result.run).success).toBe(true);
          run = deepFreeze(result.run);
          settled = isTerminal(run);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('the facts of a run from queued replay as: (started requeued)* started, (awaiting_input resumed)*, settled at most once', () => {
    fc.assert(
      fc.property(fc.array(event, { maxLength: 30 }), (events) => {
        let run = runIn('queued');
        const facts: string[] = [];
        events.forEach((e, i) => {
          const r = transition(run, e, at(10 + i));
          if (r.ok) {
            run = r.run;
            facts.push(...r.facts.map((f) => f.type));
          }
        });
        const shape = facts.join(' ');
        expect(shape).toMatch(
          /^(run\.started( run\.awaiting_input run\.resumed)* run\.requeued ?)*(run\.started( run\.awaiting_input run\.resumed)*( run\.awaiting_input)?)?( ?run\.settled)?$/,
        );
        expect(facts.filter((f) => f === 'run.settled').length).toBeLessThanOrEqual(1);
      }),
      { numRuns: 300 },
    );
  });
});

describe('health: a held-open session is not a stuck batch', () => {
  it('reads each status and lifetime', () => {
    const now = at(60);
    expect(health(runIn('queued'), now)).toBe('queued');
    expect(health(runIn('running'), now)).toBe('in_progress');
    expect(health(runIn('running', SPECS.sandbox), now)).toBe('held_open');
    expect(health(runIn('awaiting_input', SPECS.agent), now)).toBe('awaiting_input');
    for (const s of TERMINAL_STATUSES) expect(health(runIn(s, SPECS.sandbox), at(10_000))).toBe('settled');
    expect(isHeldOpen(runIn('running', SPECS.sandbox))).toBe(true);
    expect(isHeldOpen(runIn('running'))).toBe(false);
  });
  it('past expiresAt, a live run is expired (the reaper is due)', () => {
    const session = runIn('running', SPECS.sandbox);
    expect(health(session, at(899))).toBe('held_open');
    expect(health(session, at(900))).toBe('expired');
    expect(health(runIn('queued', SPECS.sandbox), at(901))).toBe('expired');
  });
});
