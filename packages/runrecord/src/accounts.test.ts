import { describe, expect, it } from 'vitest';
import { addr, closed, exec, image, res, susp } from '../test/helpers.js';
import { AccountWalker, accountVerdict } from './accounts.js';

const park = [susp(image(2)), res(image(2))];

describe('account verdicts', () => {
  it('non_blocking: every interval accounted and resolves only what was outstanding at its start', () => {
    expect(
      accountVerdict([exec(1, ['a', 'b']), ...park, exec(3, ['c'], ['a']), ...park, exec(4, [], ['c', 'b'])]),
    ).toEqual({
      verdict: 'non_blocking',
    });
    // calls still outstanding at the end are allowed
    expect(accountVerdict([exec(1, ['never-answered']), closed()]).verdict).toBe('non_blocking');
  });

  it('no_verdict: no executed segment, or any unaccounted one (decided first)', () => {
    expect(accountVerdict([])).toEqual({ verdict: 'no_verdict', reason: 'no_executed_segment' });
    expect(accountVerdict([closed()]).verdict).toBe('no_verdict');
    expect(accountVerdict([exec(1, ['a'], ['a']), exec(2), exec(3, [], ['zz'])])).toEqual({
      verdict: 'no_verdict',
      reason: 'unaccounted',
      index: 1,
    });
  });

  it('blocking: a segment resolves a call it dispatched itself (first one, with index and id)', () => {
    expect(
      accountVerdict([exec(1, ['a']), ...park, exec(2, ['b', 'c'], ['a', 'c']), exec(3, ['d'], ['d'])]),
    ).toEqual({
      verdict: 'blocking',
      index: 3,
      callId: 'c',
    });
  });

  it('unreadable: never dispatched, resolved twice, dispatched twice — and it outranks blocking', () => {
    expect(accountVerdict([exec(1, [], ['x'])])).toEqual({
      verdict: 'unreadable',
      index: 0,
      callId: 'x',
      reason: 'never_dispatched',
    });
    expect(accountVerdict([exec(1, ['a']), exec(2, [], ['a']), exec(3, [], ['a'])])).toMatchObject({
      verdict: 'unreadable',
      index: 2,
      callId: 'a',
      reason: 'resolved_twice',
    });
    expect(accountVerdict([exec(1, ['a']), exec(2, ['a'])])).toMatchObject({
      index: 1,
      callId: 'a',
      reason: 'dispatched_twice',
    });
    expect(accountVerdict([exec(1, ['a', 'a'])])).toMatchObject({ index: 0, reason: 'dispatched_twice' });
    expect(accountVerdict([exec(1, ['a']), exec(2, [], ['a', 'a'])])).toMatchObject({
      index: 1,
      reason: 'resolved_twice',
    });
    // blocking at 0, unreadable at 2: unreadable wins
    expect(accountVerdict([exec(1, ['a'], ['a']), exec(2, ['b']), exec(3, [], ['q'])])).toMatchObject({
      verdict: 'unreadable',
      index: 2,
    });
    // resolving a call dispatched later is "never dispatched" at the time
    expect(accountVerdict([exec(1, [], ['a']), exec(2, ['a'])])).toMatchObject({
      verdict: 'unreadable',
      index: 0,
    });
  });

  it('the walker reports outstanding calls', () => {
    const w = new AccountWalker();
    w.push(0, exec(1, ['a', 'b']));
    w.push(1, exec(2, [], ['a']));
    expect(w.outstanding()).toEqual(['b']);
    w.push(2, { kind: 'executed', attestation: addr(3) });
    expect(w.outstanding()).toBeUndefined();
  });
});
