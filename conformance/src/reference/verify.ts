// The reference `verify`: from genesis, each segment in turn RecordClosed → MalformedSnapshot /
// MalformedRecord → HeadMismatch → PhaseViolation → SnapshotMismatch → ManifestMismatch → ZeroIdleEnergy,
// and for an executed segment rules 6–9 (attest-rules.ts); then a bundle entry no segment names
// (MalformedRecord), the record's head field, then the caller's expected head.
import {
  type ErrorCodeT,
  type Segment,
  SegmentContent,
  type VerifyOutputT,
  WireHeader,
} from '../contract/schemas.js';
import { accountVerdict } from './account.js';
import { attestRuleBroken, type ReferenceVariant, readBundle, SPEC } from './attest-rules.js';
import { advance, genesis } from './chain.js';
import { afterAppend, EMPTY_STATE, isClosed, phaseOf, ruleBroken } from './rules.js';
import { snapshotForm } from './segment.js';

function fail(error: ErrorCodeT, index?: number): VerifyOutputT {
  return index === undefined ? { ok: false, error } : { ok: false, error, index };
}

function recordedHead(raw: unknown): unknown {
  return typeof raw === 'object' && raw !== null && 'head' in raw ? raw.head : undefined;
}

export interface VerifyArgs {
  readonly expectHead?: string | undefined;
  readonly trustKeys?: readonly string[] | undefined;
}

export function referenceVerify(
  input: unknown,
  args: VerifyArgs = {},
  variant: ReferenceVariant = SPEC,
): VerifyOutputT {
  const header = WireHeader.safeParse(input);
  if (!header.success) return fail('MalformedRecord');
  let bundle = readBundle(input);
  if (bundle === 'not-an-object') {
    if (variant.refuseNonObjectBundle) return fail('MalformedRecord');
    bundle = 'absent';
  }
  const entries = bundle === 'absent' ? new Map<string, unknown>() : bundle;
  const { unit_id, grants_id, head: recordHead } = header.data;
  let head = genesis(unit_id, grants_id);
  let state = EMPTY_STATE;
  let idle = 0n;
  let active = 0n;
  const unbundled: string[] = [];
  const named = new Set<string>();
  const signers: string[] = [];
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
    const headBefore = head;
    head = advance(head, segment);
    if (head !== segHead) return fail('HeadMismatch', index);
    const broken = ruleBroken(state, segment);
    if (broken !== undefined) return fail(broken, index);
    if (segment.kind === 'executed') {
      const address = segment.attestation;
      const site = {
        unitId: unit_id,
        grantsId: grants_id,
        headBefore,
        address,
        bundled: entries.has(address),
        raw: entries.get(address),
        trustKeys: args.trustKeys,
      };
      const checked = attestRuleBroken(site, variant);
      if (checked.error !== undefined) return fail(checked.error, index);
      if (checked.body === undefined) unbundled.push(address);
      else {
        named.add(address);
        active += BigInt(checked.body.active_uj);
        const key = checked.body.signature?.key;
        if (key !== undefined && !signers.includes(key)) signers.push(key);
      }
    }
    state = afterAppend(state, segment);
    if (segment.kind === 'resumed') idle += BigInt(segment.idle_uj);
    segments.push(segment);
  }
  if (variant.refuseOrphans && [...entries.keys()].some((k) => !named.has(k))) return fail('MalformedRecord');
  if (recordHead !== head) return fail('HeadMismatch');
  if (args.expectHead !== undefined && args.expectHead !== head) return fail('HeadMismatch');
  return {
    ok: true,
    head,
    length: segments.length,
    idle_uj: idle.toString(),
    account: accountVerdict(segments).verdict,
    phase: phaseOf(state),
    cost: {
      active_uj: active.toString(),
      idle_uj: idle.toString(),
      total_uj: (active + idle).toString(),
      unresolved: variant.unresolved(unbundled),
    },
    signed_by: signers,
  };
}
