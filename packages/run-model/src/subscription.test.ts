import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at, runIn, SPECS } from '../test/fixtures.js';
import {
  applyTransition,
  type CausationCheck,
  causationCheck,
  causationError,
  createRun,
  eventFromFact,
  matchEvent,
  PlatformEvent,
  RunSpec,
  runSpecFor,
  Subscription,
  scheduleFiredEvent,
} from './index.js';

const { origin: _o, ...agentTemplate } = SPECS.agent;
const sub = Subscription.parse({
  id: 'sub_1',
  tenant: 't_1',
  selector: { eventKind: 'run.settled', filter: { outcome: 'failed', kind: 'eval', 'error.code': 'boom' } },
  runSpec: agentTemplate,
  enabled: true,
  cooldownMs: 60_000,
  maxDepth: 2,
});

const failedEval = applyTransition(
  runIn('running', SPECS.eval, 'run_7'),
  { type: 'fail', error: { code: 'boom', message: 'x' } },
  at(30),
);
const settledEvent = eventFromFact(failedEval.facts[0]!, 'ev_9');

describe('events', () => {
  it('a run fact becomes a platform event with flat data', () => {
    expect(PlatformEvent.parse(settledEvent)).toEqual(settledEvent);
    expect(settledEvent).toMatchObject({
      kind: 'run.settled',
      runId: 'run_7',
      data: { outcome: 'failed', kind: 'eval', error: { code: 'boom' } },
    });
  });
  it('schedule.fired is an event kind of its own', () => {
    const ev = scheduleFiredEvent({
      eventId: 'ev_1',
      tenant: 't_1',
      scheduleId: 'sch_1',
      firedAt: at(0),
      cron: '0 * * * *',
    });
    expect(PlatformEvent.parse(ev)).toMatchObject({
      kind: 'schedule.fired',
      data: { scheduleId: 'sch_1', cron: '0 * * * *' },
    });
  });
});

describe('matchEvent', () => {
  it('matches tenant, kind and every filter field (dotted paths reach nested data)', () => {
    expect(matchEvent(sub, settledEvent)).toBe(true);
    expect(matchEvent(sub, { ...settledEvent, tenant: 't_2' })).toBe(false);
    expect(matchEvent(sub, { ...settledEvent, kind: 'run.started' })).toBe(false);
    expect(matchEvent(sub, { ...settledEvent, data: { ...settledEvent.data, outcome: 'succeeded' } })).toBe(
      false,
    );
    expect(matchEvent(sub, { ...settledEvent, data: { outcome: 'failed', kind: 'eval' } })).toBe(false);
  });
  it('supports prefix wildcards and an empty filter', () => {
    const any = { tenant: 't_1', selector: { eventKind: 'run.*', filter: {} } };
    expect(matchEvent(any, settledEvent)).toBe(true);
    expect(
      matchEvent(
        { ...any, selector: { eventKind: '*', filter: {} } },
        scheduleFiredEvent({ eventId: 'e', tenant: 't_1', scheduleId: 's', firedAt: at(0) }),
      ),
    ).toBe(true);
    expect(matchEvent({ ...any, selector: { eventKind: 'ci.*', filter: {} } }, settledEvent)).toBe(false);
  });
  it('a subscription needs a well-formed selector, and a session template needs a TTL', () => {
    expect(Subscription.safeParse({ ...sub, selector: { eventKind: 'run settled' } }).success).toBe(false);
    const { origin: _, expiresAt: _e, ...sandbox } = SPECS.sandbox;
    expect(Subscription.safeParse({ ...sub, runSpec: sandbox }).success).toBe(false);
    expect(Subscription.safeParse({ ...sub, runSpec: sandbox, sessionTtlMs: 600_000 }).success).toBe(true);
  });
});

describe('causationCheck: every refusal checkable from data', () => {
  const base: CausationCheck = {
    sub,
    event: settledEvent,
    causingRun: failedEval.run,
    now: at(100),
  };
  it('allows, with or without a causing run (depth is the admission guard)', () => {
    expect(causationCheck(base)).toEqual({ allowed: true });
    expect(causationCheck({ ...base, causingRun: undefined })).toEqual({ allowed: true });
  });
  it('disabled', () => {
    expect(causationCheck({ ...base, sub: { ...sub, enabled: false } })).toMatchObject({
      allowed: false,
      reason: 'disabled',
    });
  });
  it('self_cause: a run this subscription created', () => {
    const spawned = createRun(runSpecFor(sub, settledEvent, failedEval.run), {
      id: 'run_8',
      tenant: 't_1',
      createdBy: 'sub_1',
      now: at(31),
    }).run;
    expect(spawned.origin).toMatchObject({
      cause: 'event',
      eventId: 'ev_9',
      eventKind: 'run.settled',
      subscriptionId: 'sub_1',
      causedByRunId: 'run_7',
    });
    expect(causationCheck({ ...base, causingRun: spawned })).toMatchObject({
      allowed: false,
      reason: 'self_cause',
    });
  });
  it('self_cause: the same agent would wake itself, even via another subscription', () => {
    const agentRun = runIn('succeeded', SPECS.agent, 'run_a');
    expect(causationCheck({ ...base, causingRun: agentRun })).toMatchObject({
      allowed: false,
      reason: 'self_cause',
    });
    const other = runIn(
      'succeeded',
      { ...SPECS.agent, subject: { ...SPECS.agent.subject, agentId: 'ag_2' } },
      'run_b',
    );
    expect(causationCheck({ ...base, causingRun: other }).allowed).toBe(true);
  });
  it('cooldown, and its refusal as a typed 429', () => {
    const v = causationCheck({ ...base, lastFiredAt: at(50) });
    expect(v).toMatchObject({ allowed: false, reason: 'cooldown' });
    if (!v.allowed) {
      expect(causationError(v, sub.id)).toMatchObject({
        code: 'causation_refused',
        httpStatus: 429,
        details: { reason: 'cooldown', subscriptionId: 'sub_1' },
      });
    }
    expect(causationCheck({ ...base, lastFiredAt: at(40) }).allowed).toBe(true);
  });
  it('cooldown fails closed: an unreadable clock never skips it', () => {
    for (const [now, lastFiredAt] of [
      ['not a time', at(0)],
      [at(100), 'not a time'],
    ] as const) {
      expect(causationCheck({ ...base, now, lastFiredAt })).toMatchObject({
        allowed: false,
        reason: 'cooldown',
      });
    }
  });
  it('property: allowed iff enabled, not self, outside cooldown', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.nat(200),
        fc.option(fc.nat(200), { nil: undefined }),
        (enabled, now, last) => {
          const v = causationCheck({
            ...base,
            sub: { ...sub, enabled },
            now: at(now + 200),
            lastFiredAt: last === undefined ? undefined : at(last + 200),
          });
          const cooled = last === undefined || (now - last) * 1000 >= sub.cooldownMs;
          expect(v.allowed).toBe(enabled && cooled);
        },
      ),
    );
  });
});

describe('runSpecFor', () => {
  it('a schedule firing stamps cause schedule; a session template gets expiresAt from the firing', () => {
    const { origin: _, expiresAt: _e, ...sandbox } = SPECS.sandbox;
    const s = Subscription.parse({
      ...sub,
      selector: { eventKind: 'schedule.fired' },
      runSpec: sandbox,
      sessionTtlMs: 60_000,
    });
    const spec = RunSpec.parse(
      runSpecFor(
        s,
        scheduleFiredEvent({ eventId: 'e1', tenant: 't_1', scheduleId: 'sch_1', firedAt: at(0) }),
      ),
    );
    expect(spec.origin).toEqual({
      cause: 'schedule',
      scheduleId: 'sch_1',
      eventId: 'e1',
      eventKind: 'schedule.fired',
      subscriptionId: 'sub_1',
    });
    expect(spec.expiresAt).toBe(at(60));
  });
});
