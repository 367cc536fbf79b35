// Accounts: the walk that tells a run that handed its waits off from one that sat in them.
import type { Account, Segment, SegmentBody } from './types.js';

export type AccountVerdict =
  | { readonly verdict: 'non_blocking' }
  | {
      readonly verdict: 'no_verdict';
      readonly reason: 'no_executed_segment' | 'unaccounted';
      readonly index?: number;
    }
  | { readonly verdict: 'blocking'; readonly index: number; readonly callId: string }
  | {
      readonly verdict: 'unreadable';
      readonly index: number;
      readonly callId: string;
      readonly reason: 'never_dispatched' | 'resolved_twice' | 'dispatched_twice';
    };
export type AccountVerdictName = AccountVerdict['verdict'];

const OUTSTANDING = 1;
const RESOLVED = 2;

/**
 * Incremental form of the walk (memory: one entry per distinct call id, nothing per segment). Feed it
 * segments in order; `verdict()` may be asked at any point. Order of decision: no_verdict, then unreadable
 * (the first problem in walk order), then blocking (the first self-resolved call), else non_blocking.
 */
export class AccountWalker {
  private calls: Map<string, number> | null = new Map();
  private executed = 0;
  private unaccountedAt: number | undefined;
  private unreadable: Extract<AccountVerdict, { verdict: 'unreadable' }> | undefined;
  private blocking: Extract<AccountVerdict, { verdict: 'blocking' }> | undefined;

  push(index: number, body: SegmentBody): void {
    if (body.kind !== 'executed') return;
    this.executed++;
    if (this.unaccountedAt !== undefined) return;
    if (body.account === undefined) {
      this.unaccountedAt = index;
      this.calls = null; // the verdict is settled: stop remembering ids
      return;
    }
    if (this.unreadable === undefined) this.walk(index, body.account);
  }

  private walk(index: number, account: Account): void {
    const calls = this.calls!;
    for (const id of account.dispatched) {
      if (calls.has(id)) {
        this.unreadable = { verdict: 'unreadable', index, callId: id, reason: 'dispatched_twice' };
        return;
      }
      calls.set(id, OUTSTANDING);
    }
    for (const id of account.resolved) {
      const state = calls.get(id);
      if (state === undefined) {
        this.unreadable = { verdict: 'unreadable', index, callId: id, reason: 'never_dispatched' };
        return;
      }
      if (state === RESOLVED) {
        this.unreadable = { verdict: 'unreadable', index, callId: id, reason: 'resolved_twice' };
        return;
      }
      calls.set(id, RESOLVED);
      if (this.blocking === undefined && account.dispatched.includes(id))
        this.blocking = { verdict: 'blocking', index, callId: id };
    }
  }

  /** Calls dispatched and not yet resolved (undefined once the verdict is no_verdict). */
  outstanding(): string[] | undefined {
    if (!this.calls) return undefined;
    return [...this.calls].filter(([, s]) => s === OUTSTANDING).map(([id]) => id);
  }

  verdict(): AccountVerdict {
    if (this.executed === 0) return { verdict: 'no_verdict', reason: 'no_executed_segment' };
    if (this.unaccountedAt !== undefined) {
      return { verdict: 'no_verdict', reason: 'unaccounted', index: this.unaccountedAt };
    }
    return this.unreadable ?? this.blocking ?? { verdict: 'non_blocking' };
  }
}

/** The verdict of a whole record's accounts. */
export function accountVerdict(segments: readonly (Segment | SegmentBody)[]): AccountVerdict {
  const walker = new AccountWalker();
  segments.forEach((s, i) => {
    walker.push(i, s);
  });
  return walker.verdict();
}
