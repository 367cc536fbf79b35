// Numbers a caller may pass that no date can hold: refused as invalid_input (400), never a RangeError
// thrown later (at a subscription's firing, or in the reaper's deadline arithmetic).
import { describe, expect, it } from 'vitest';
import { at, SPECS } from '../test/fixtures.js';
import {
  createRun,
  extendExpiry,
  MAX_SESSION_TTL_SEC,
  RunModelError,
  runSpecFor,
  Subscription,
  scheduleFiredEvent,
  sessionDeadlines,
} from './index.js';

const { origin: _o, expiresAt: _e, ...sandbox } = SPECS.sandbox;
const sub = (sessionTtlMs: number) => ({
  id: 'sub_1',
  tenant: 't_1',
  selector: { eventKind: 'schedule.fired' },
  runSpec: sandbox,
  sessionTtlMs,
  enabled: true,
  cooldownMs: 0,
  maxDepth: 1,
});
const fired = scheduleFiredEvent({ eventId: 'e1', tenant: 't_1', scheduleId: 's1', firedAt: at(0) });

const refusedAsInput = (fn: () => unknown) => {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(RunModelError);
  expect((caught as RunModelError).code).toBe('invalid_input');
};

describe('a subscription session TTL is bounded like every session', () => {
  it('refuses a TTL past MAX_SESSION_TTL_SEC (which made runSpecFor throw a RangeError at firing)', () => {
    expect(Subscription.safeParse(sub(Number.MAX_SAFE_INTEGER)).success).toBe(false);
    expect(Subscription.safeParse(sub(MAX_SESSION_TTL_SEC * 1000 + 1)).success).toBe(false);
    const longest = Subscription.parse(sub(MAX_SESSION_TTL_SEC * 1000));
    expect(runSpecFor(longest, fired).expiresAt).toBe(
      new Date(Date.parse(at(0)) + MAX_SESSION_TTL_SEC * 1000).toISOString(),
    );
  });
});

describe('session deadline arithmetic refuses what no date holds', () => {
  it('extendExpiry: infinite or huge TTLs and unreadable timestamps are invalid_input', () => {
    refusedAsInput(() => extendExpiry(at(10), Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, at(0)));
    refusedAsInput(() => extendExpiry(at(10), 1e13, 1e13, at(0)));
    refusedAsInput(() => extendExpiry('not a time', 60, 60, at(0)));
    refusedAsInput(() => extendExpiry(at(10), 60, 60, 'not a time'));
    expect(extendExpiry(at(10), 60, 30, at(0))).toBe(at(30));
  });
  it('sessionDeadlines: a lifetime outside SessionLifetime is invalid_input', () => {
    refusedAsInput(() => sessionDeadlines({ ttlSec: 1e15, idleTimeoutSec: 1 }, at(0)));
    refusedAsInput(() => sessionDeadlines({ ttlSec: 60, idleTimeoutSec: 60 }, 'yesterday'));
    expect(sessionDeadlines({ ttlSec: 60, idleTimeoutSec: 30 }, at(0))).toEqual({
      expiresAt: at(60),
      idleDeadline: at(30),
    });
  });
});

describe('a session run is born with a hard expiry the reaper can honour', () => {
  const ctx = { id: 'run_s', tenant: 't_1', createdBy: 'u_1', now: at(0) };
  it('expiresAt more than MAX_SESSION_TTL_SEC away is invalid_input; exactly that far is accepted', () => {
    const far = at(MAX_SESSION_TTL_SEC + 1);
    refusedAsInput(() => createRun({ ...SPECS.sandbox, expiresAt: far }, ctx));
    refusedAsInput(() => createRun({ ...SPECS.sandbox, expiresAt: '9999-12-31T00:00:00Z' }, ctx));
    expect(createRun({ ...SPECS.sandbox, expiresAt: at(MAX_SESSION_TTL_SEC) }, ctx).run.expiresAt).toBe(
      at(MAX_SESSION_TTL_SEC),
    );
  });
  it('a task run may carry any future expiresAt', () => {
    expect(createRun({ ...SPECS.eval, expiresAt: '9999-12-31T00:00:00Z' }, ctx).run.status).toBe('queued');
  });
});
