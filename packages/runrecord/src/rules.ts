// The rules a host applies on append and a verifier applies from genesis, in the spec's order, so that both
// blame the same segment with the same code:
//   RecordClosed → (MalformedSnapshot | MalformedRecord) → [HeadMismatch: verifier only] → PhaseViolation
//   → SnapshotMismatch → ManifestMismatch → ZeroIdleEnergy.
// Encoding (the malformed checks) lives in segment.ts; the head check in verify.ts.
import { RunRecordError } from './errors.js';
import { normalizeSnapshot, sameSnapshot } from './snapshot.js';
import type { Hex, Phase, SegmentBody, SegmentKind, SnapshotRef } from './types.js';

/** What the rules remember: the kind of the last segment and, while parked, what the park recorded. */
export interface RuleState {
  readonly last: SegmentKind | 'genesis';
  readonly parked: { readonly snapshot: SnapshotRef; readonly manifest: Hex } | null;
}

export const GENESIS_STATE: RuleState = Object.freeze({ last: 'genesis', parked: null });

export function phaseOf(state: RuleState): Phase {
  if (state.last === 'closed') return 'closed';
  return state.last === 'suspended' ? 'parked' : 'active';
}

/** Rule 2, first half: nothing follows `closed`. */
export function checkOpen(state: RuleState): RunRecordError | null {
  return state.last === 'closed' ? new RunRecordError('RecordClosed', 'the record is closed') : null;
}

const FOLLOWS: Record<SegmentKind, ReadonlyArray<SegmentKind | 'genesis'>> = {
  executed: ['genesis', 'executed', 'resumed'],
  suspended: ['executed'],
  resumed: ['suspended'],
  closed: ['genesis', 'executed', 'suspended', 'resumed'],
};

/** Rules 2, 3 and 5 for an encodable body (rule 4 is enforced by encoding). */
export function checkTransition(state: RuleState, body: SegmentBody): RunRecordError | null {
  if (!FOLLOWS[body.kind].includes(state.last)) {
    return new RunRecordError('PhaseViolation', `${body.kind} cannot follow ${state.last}`);
  }
  if (body.kind !== 'resumed') return null;
  const parked = state.parked!;
  if (!sameSnapshot(parked.snapshot, body.snapshot)) {
    return new RunRecordError(
      'SnapshotMismatch',
      'the resumed snapshot is not the one recorded at suspension',
    );
  }
  if (parked.manifest !== body.manifest) {
    return new RunRecordError(
      'ManifestMismatch',
      'the resumed manifest is not the one recorded at suspension',
    );
  }
  if (body.idleUj === 0n) {
    return new RunRecordError('ZeroIdleEnergy', 'a park draws power: idle_uj must not be 0');
  }
  return null;
}

/** The state after an accepted body. */
export function advanceState(state: RuleState, body: SegmentBody): RuleState {
  if (body.kind === 'suspended') {
    return {
      last: 'suspended',
      parked: { snapshot: normalizeSnapshot(body.snapshot), manifest: body.manifest },
    };
  }
  if (body.kind === state.last && body.kind === 'executed') return state;
  return { last: body.kind, parked: null };
}
