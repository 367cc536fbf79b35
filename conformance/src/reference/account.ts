// The account verdict of spec/runrecord.md, "Accounts": no_verdict, then unreadable, then blocking.
import type { Segment, VerdictT } from '../contract/schemas.js';

export interface AccountFinding {
  readonly verdict: VerdictT;
  /** The segment index and call id to blame, for unreadable and blocking. */
  readonly index?: number;
  readonly call?: string;
}

export function accountVerdict(segments: readonly Segment[]): AccountFinding {
  const executed = segments.filter((s) => s.kind === 'executed');
  if (executed.length === 0 || executed.some((s) => s.account === undefined))
    return { verdict: 'no_verdict' };

  const dispatchedEver = new Set<string>();
  const resolvedEver = new Set<string>();
  let blocking: AccountFinding | undefined;
  for (const [index, s] of segments.entries()) {
    if (s.kind !== 'executed' || s.account === undefined) continue;
    const outstandingAtStart = new Set([...dispatchedEver].filter((c) => !resolvedEver.has(c)));
    const dispatchedHere = new Set<string>();
    for (const call of s.account.dispatched) {
      if (dispatchedEver.has(call)) return { verdict: 'unreadable', index, call };
      dispatchedEver.add(call);
      dispatchedHere.add(call);
    }
    for (const call of s.account.resolved) {
      if (!dispatchedEver.has(call) || resolvedEver.has(call)) return { verdict: 'unreadable', index, call };
      resolvedEver.add(call);
      if (!outstandingAtStart.has(call) && dispatchedHere.has(call) && blocking === undefined) {
        blocking = { verdict: 'blocking', index, call };
      }
    }
  }
  return blocking ?? { verdict: 'non_blocking' };
}
