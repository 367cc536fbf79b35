import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { adjust, hasRoom, isMemberSession, type SessionLoad, sessionBlock } from './session-pool.js';

const caps = { maxSessions: 4, memberReserve: 2 };

describe('session pool', () => {
  it('lets agents fill only the unreserved slots, members all of them', () => {
    expect(hasRoom({ total: 2, member: 0 }, caps, false)).toBe(false);
    expect(hasRoom({ total: 2, member: 0 }, caps, true)).toBe(true);
    expect(hasRoom({ total: 3, member: 2 }, caps, false)).toBe(true);
    expect(hasRoom({ total: 3, member: 1 }, caps, false)).toBe(false);
    expect(hasRoom({ total: 4, member: 4 }, caps, true)).toBe(false);
    expect(isMemberSession({ cause: 'member' })).toBe(true);
    expect(isMemberSession({ cause: 'member', causedByRunId: 'agent' })).toBe(false);
  });

  it('checks the tenant pool before the global one', () => {
    const none = { total: 0, member: 0 };
    expect(
      sessionBlock(
        { load: none, caps },
        { load: { total: 10, member: 0 }, caps: { maxSessions: 10, memberReserve: 0 } },
        true,
      ),
    ).toBe('global');
    expect(sessionBlock({ load: { total: 4, member: 0 }, caps }, { load: none, caps }, true)).toBe('tenant');
  });

  // Property: whatever the agents do, a member holding fewer than `memberReserve` sessions can open one.
  it('never crowds a member out below the reserve (property)', () => {
    const op = fc.record({ member: fc.boolean(), open: fc.boolean() });
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 100 }),
        fc.integer({ min: 1, max: 6 }),
        fc.nat(),
        (ops, max, r) => {
          const pool = { maxSessions: max, memberReserve: r % (max + 1) };
          let load: SessionLoad = { total: 0, member: 0 };
          for (const o of ops) {
            if (o.open && hasRoom(load, pool, o.member)) load = adjust(load, o.member, 1);
            else if (!o.open && (o.member ? load.member : load.total - load.member) > 0)
              load = adjust(load, o.member, -1);
            expect(load.total).toBeLessThanOrEqual(pool.maxSessions);
            if (load.member < pool.memberReserve) expect(hasRoom(load, pool, true)).toBe(true);
          }
        },
      ),
    );
  });
});
