// The reference `verify`: from genesis, each segment in turn RecordClosed → MalformedSnapshot /
// MalformedRecord → HeadMismatch → PhaseViolation → SnapshotMismatch → ManifestMismatch → ZeroIdleEnergy;
// then the record's head field, then the caller's expected head.
import {
  type ErrorCodeT,
  type Segment,
  SegmentContent,
  type VerifyOutputT,
  WireHeader,
} from '../contract/schemas.js';
import { accountVerdict } from './account.js';
import { advance, genesis } from './chain.js';
import { afterAppend, EMPTY_STATE, isClosed, phaseOf, ruleBroken } from './rules.js';
import { snapshotForm } from './segment.js';

function fail(error: ErrorCodeT, index?: number): VerifyOutputT {
  return index === undefined ? { ok: false, error } : { ok: false, error, index };
}

function recordedHead(raw: unknown): unknown {
  return typeof raw === 'object' && raw !== null && 'head' in raw ? raw.head : undefined;
}

export function referenceVerify(input: unknown, expectHead?: string): VerifyOutputT {
  const header = WireHeader.safeParse(input);
  if (!header.success) return fail('MalformedRecord');
  const { unit_id, grants_id, head: recordHead } = header.data;
  let head = genesis(unit_id, grants_id);
  let state = EMPTY_STATE;
  let idle = 0n;
  const segments: Segment[] = [];
  for (const [index, raw] of header.data.segments.entries()) {
    if (isClosed(state)) return fail('RecordClosed', index);
    const parsed = SegmentContent.safeParse(raw);
    const segHead = recordedHead(raw);
    if (!parsed.success || typeof segHead !== 'string' || !/^[0-9a-f]{64}$/.test(segHead))
      return fail('MalformedRecord', index);
    const segment = parsed.data;
    if (
      (segment.kind === 'suspended' || segment.kind === 'resumed') &&
      snapshotForm(segment.snapshot) === 'malformed'
    )
      return fail('MalformedSnapshot', index);
    head = advance(head, segment);
    if (head !== segHead) return fail('HeadMismatch', index);
    const broken = ruleBroken(state, segment);
    if (broken !== undefined) return fail(broken, index);
    state = afterAppend(state, segment);
    if (segment.kind === 'resumed') idle += BigInt(segment.idle_uj);
    segments.push(segment);
  }
  if (recordHead !== head) return fail('HeadMismatch');
  if (expectHead !== undefined && expectHead !== head) return fail('HeadMismatch');
  return {
    ok: true,
    head,
    length: segments.length,
    idle_uj: idle.toString(),
    account: accountVerdict(segments).verdict,
    phase: phaseOf(state),
  };
}
