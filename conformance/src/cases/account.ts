// ACCOUNT: every verdict of spec/runrecord.md "Accounts", and their precedence
// (no_verdict > unreadable > blocking). `verify` prints only the verdict string, so that is what is asserted.
import type { AccountT, VerdictT } from '../contract/schemas.js';
import { att, ROOT } from './addresses.js';
import { type Case, calls, close, execute, image, resume, suspend } from './define.js';

const park = image(ROOT);

/** An interval per account, parked in between so each resolves in a later interval than it dispatched. */
function parked(...accounts: Array<AccountT | undefined>): unknown[] {
  return accounts.flatMap((a, i) =>
    i === 0 ? [execute(att(i + 1), a)] : [suspend(park), resume(park), execute(att(i + 1), a)],
  );
}

function verdict(name: string, account: VerdictT, description: string, ops: readonly unknown[]): Case {
  return { kind: 'build', class: 'ACCOUNT', name, description, ops, verify: { account } };
}

export const ACCOUNT_CASES: readonly Case[] = [
  verdict(
    'non-blocking-dispatch-park-resolve',
    'non_blocking',
    'Dispatch, end the interval, park, resolve in a later interval.',
    parked(calls(['c1']), calls([], ['c1'])),
  ),
  verdict(
    'non-blocking-consecutive-intervals',
    'non_blocking',
    'Resolved in the next interval with no park between: still outstanding at its start.',
    [execute(att(1), calls(['c1'])), execute(att(2), calls([], ['c1']))],
  ),
  verdict('non-blocking-no-calls', 'non_blocking', 'Every interval accounted, none with calls.', [
    execute(att(1), calls()),
    execute(att(2), calls()),
  ]),
  verdict(
    'non-blocking-outstanding-at-end',
    'non_blocking',
    'A call never resolved (an approval that never comes) is allowed at the end.',
    [...parked(calls(['c1', 'c2']), calls([], ['c1'])), close('completed')],
  ),
  verdict(
    'blocking-resolves-own-dispatch',
    'blocking',
    'An interval resolves the call it dispatched itself (blocking at index 0, call c1).',
    [execute(att(1), calls(['c1'], ['c1']))],
  ),
  verdict(
    'blocking-in-a-later-interval',
    'blocking',
    'The third interval resolves c1 (outstanding) and c2 (its own): blocking at index 6, call c2.',
    parked(calls(['c1']), calls(), calls(['c2'], ['c1', 'c2'])),
  ),
  verdict(
    'unreadable-resolve-never-dispatched',
    'unreadable',
    'A result answering a call never dispatched (index 0, call c9).',
    [execute(att(1), calls([], ['c9']))],
  ),
  verdict(
    'unreadable-resolve-before-dispatch',
    'unreadable',
    'Resolved in an interval before the one that dispatches it: never dispatched at that point.',
    [execute(att(1), calls([], ['c1'])), execute(att(2), calls(['c1']))],
  ),
  verdict(
    'unreadable-resolve-twice',
    'unreadable',
    'A call resolved in two intervals (index 6, call c1).',
    parked(calls(['c1']), calls([], ['c1']), calls([], ['c1'])),
  ),
  verdict(
    'unreadable-resolve-twice-in-one-interval',
    'unreadable',
    'A call resolved twice by one interval.',
    [execute(att(1), calls(['c1'])), execute(att(2), calls([], ['c1', 'c1']))],
  ),
  verdict('unreadable-dispatch-twice', 'unreadable', 'One id dispatched by two intervals.', [
    execute(att(1), calls(['c1'])),
    execute(att(2), calls(['c1'])),
  ]),
  verdict(
    'unreadable-dispatch-twice-in-one-interval',
    'unreadable',
    'One id dispatched twice by one interval.',
    [execute(att(1), calls(['c1', 'c1']))],
  ),
  verdict(
    'unreadable-dispatch-again-after-resolve',
    'unreadable',
    'An id dispatched again after it was resolved: dispatched twice.',
    [execute(att(1), calls(['c1'])), execute(att(2), calls([], ['c1'])), execute(att(3), calls(['c1']))],
  ),
  verdict('no-verdict-no-executed-segment', 'no_verdict', 'A record with no executed segment.', [
    close('abandoned'),
  ]),
  verdict('no-verdict-unaccounted-interval', 'no_verdict', 'One interval without an account.', [
    execute(att(1), calls(['c1'])),
    execute(att(2)),
    execute(att(3), calls([], ['c1'])),
  ]),
  verdict('no-verdict-over-unreadable', 'no_verdict', 'An unaccounted interval and an unreadable one.', [
    execute(att(1)),
    execute(att(2), calls([], ['c9'])),
  ]),
  verdict('no-verdict-over-blocking', 'no_verdict', 'A blocking interval and an unaccounted one after it.', [
    execute(att(1), calls(['c1'], ['c1'])),
    execute(att(2)),
  ]),
  verdict(
    'unreadable-over-blocking',
    'unreadable',
    'A blocking interval first, an unreadable one after it: unreadable is decided before blocking.',
    [execute(att(1), calls(['c1'], ['c1'])), execute(att(2), calls([], ['c9']))],
  ),
  {
    kind: 'build',
    class: 'ACCOUNT',
    name: 'account-bytes-utf8-call-ids-in-order',
    description: 'Call ids are str (u32 UTF-8 byte length ‖ bytes), in recorded order; "appel-é" is 8 bytes.',
    ops: [execute(att(1), calls(['appel-é', 'c1']))],
    verify: { account: 'non_blocking' },
    pinned: [
      {
        index: 0,
        layout: '01 ‖ att ‖ AC ‖ u32 2 ‖ str "appel-é" ‖ str "c1" ‖ u32 0',
        segment_hex: `01 ${att(1)} ac 00000002 00000008 6170 70656c2d c3a9 00000002 6331 00000000`,
      },
    ],
  },
];
