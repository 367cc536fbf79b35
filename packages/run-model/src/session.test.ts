import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { extendExpiry, SessionLifetime, SessionResult, sessionDeadlines, sessionDue } from './session.js';
import { SandboxSubject } from './subject.js';

const T0 = '2026-01-01T00:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

describe('session lifetime', () => {
  it('a sandbox subject without an image is the default image', () => {
    expect(SandboxSubject.parse({})).toEqual({ image: 'default' });
    expect(SandboxSubject.parse({ image: 'py312' })).toEqual({ image: 'py312' });
  });

  it('parses lifetimes and end reasons strictly', () => {
    expect(SessionLifetime.safeParse({ ttlSec: 0, idleTimeoutSec: 1 }).success).toBe(false);
    expect(SessionLifetime.safeParse({ ttlSec: 1.5, idleTimeoutSec: 1 }).success).toBe(false);
    expect(SessionResult.safeParse({ endReason: 'idle' }).success).toBe(true);
    expect(SessionResult.safeParse({ endReason: 'lost' }).success).toBe(false);
  });

  it('deadlines: expiry before idle, a parked session never idles', () => {
    const d = sessionDeadlines({ ttlSec: 2, idleTimeoutSec: 1 }, T0);
    expect(sessionDue(d, at(999))).toBeNull();
    expect(sessionDue(d, at(1000))).toBe('idle');
    expect(sessionDue(d, at(1000), true)).toBeNull();
    expect(sessionDue(d, at(2000))).toBe('expired');
  });

  it('a touch never shortens and never reaches past maxTtlSec from now', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        (currentMs, nowMs, ttlSec, maxSec) => {
          const current = at(currentMs);
          const next = extendExpiry(current, ttlSec, maxSec, at(nowMs));
          const n = Date.parse(next);
          expect(n).toBeGreaterThanOrEqual(Date.parse(current));
          if (n > Date.parse(current))
            expect(n).toBe(Date.parse(at(nowMs)) + Math.min(ttlSec, maxSec) * 1000);
        },
      ),
    );
  });
});
