// Accounts: the walk that tells a run that handed its waits off from one that sat in them.
import { ByteWriter } from './bytes.js';
import { IdTable } from './idtable.js';
import { writeAccount } from './segment.js';
import type { Segment, SegmentBody } from './types.js';

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

const RESOLVED = -1;
const utf8 = new TextDecoder('utf-8');

function u32(b: Uint8Array, at: number): number {
  return ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;
}

/**
 * Incremental form of the walk (memory: one entry per distinct call id, nothing per segment). Feed it
 * segments in order; `verdict()` may be asked at any point. Order of decision: no_verdict, then unreadable
 * (the first problem in walk order), then blocking (the first self-resolved call), else non_blocking.
 * The walk reads the account's canonical bytes; a call maps to the index of the segment that dispatched it
 * while outstanding, to RESOLVED after.
 */
export class AccountWalker {
  private calls: IdTable | null = new IdTable();
  private executed = 0;
  private unaccountedAt: number | undefined;
  private unreadable: Extract<AccountVerdict, { verdict: 'unreadable' }> | undefined;
  private blocking: Extract<AccountVerdict, { verdict: 'blocking' }> | undefined;
  private scratch: ByteWriter | undefined;

  push(index: number, body: SegmentBody): void {
    if (body.kind !== 'executed') return;
    this.scratch ??= new ByteWriter(64);
    const w = this.scratch;
    w.pos = 33; // 0x01 ‖ attestation: only the kind byte and the account are read
    w.buf[0] = 0x01;
    if (body.account !== undefined) writeAccount(w, body.account);
    this.pushBytes(index, w.buf, 0, w.pos);
  }

  /** The same walk over the well-formed canonical segment `seg(·)` at `b[at..end)`. */
  pushBytes(index: number, b: Uint8Array, at = 0, end = b.length): void {
    if (b[at] !== 0x01) return;
    this.executed++;
    if (this.unaccountedAt !== undefined) return;
    if (end - at === 33) {
      this.unaccountedAt = index;
      this.calls = null; // the verdict is settled: stop remembering ids
      return;
    }
    if (this.unreadable !== undefined) return;
    const calls = this.calls!;
    let p = at + 34;
    const n = u32(b, p);
    p += 4;
    for (let i = 0; i < n; i++, p += 4 + u32(b, p)) {
      const len = u32(b, p);
      if (calls.find(b, p + 4, len) >= 0) {
        this.fail(index, b, p, 'dispatched_twice');
        return;
      }
      calls.add(b, p + 4, len, index);
    }
    const m = u32(b, p);
    p += 4;
    for (let i = 0; i < m; i++, p += 4 + u32(b, p)) {
      const len = u32(b, p);
      const e = calls.find(b, p + 4, len);
      if (e < 0) {
        this.fail(index, b, p, 'never_dispatched');
        return;
      }
      const state = calls.get(e);
      if (state === RESOLVED) {
        this.fail(index, b, p, 'resolved_twice');
        return;
      }
      calls.set(e, RESOLVED);
      if (this.blocking === undefined && state === index)
        this.blocking = { verdict: 'blocking', index, callId: this.id(b, p) };
    }
  }

  private id(b: Uint8Array, p: number): string {
    return utf8.decode(b.subarray(p + 4, p + 4 + u32(b, p)));
  }

  private fail(
    index: number,
    b: Uint8Array,
    p: number,
    reason: 'never_dispatched' | 'resolved_twice' | 'dispatched_twice',
  ): void {
    this.unreadable = { verdict: 'unreadable', index, callId: this.id(b, p), reason };
  }

  /** Calls dispatched and not yet resolved (undefined once the verdict is no_verdict). */
  outstanding(): string[] | undefined {
    return this.calls?.ids((s) => s !== RESOLVED);
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
