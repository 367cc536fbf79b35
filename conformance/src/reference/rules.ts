// The rules a host applies on append and a verifier applies from genesis, in the spec's order:
// RecordClosed → (malformed: decided by the caller before hashing) → PhaseViolation → SnapshotMismatch
// → ManifestMismatch → ZeroIdleEnergy.
import type { ErrorCodeT, PhaseT, Segment, Snapshot } from '../contract/schemas.js';
import { toHex } from './bytes.js';
import { snapBytes } from './segment.js';

export interface RecordState {
  readonly last: Segment['kind'] | undefined;
  /** The park a resume must match: the snapshot and manifest of the latest suspended segment. */
  readonly park: { readonly snapshot: Snapshot; readonly manifest: string } | undefined;
}

export const EMPTY_STATE: RecordState = { last: undefined, park: undefined };

const MAY_FOLLOW: Record<Segment['kind'], ReadonlyArray<Segment['kind'] | undefined>> = {
  executed: [undefined, 'executed', 'resumed'],
  suspended: ['executed'],
  resumed: ['suspended'],
  closed: [undefined, 'executed', 'suspended', 'resumed'],
};

export function isClosed(state: RecordState): boolean {
  return state.last === 'closed';
}

/** Two references are the same park exactly when their canonical bytes are equal. */
function sameSnapshot(a: Snapshot, b: Snapshot): boolean {
  return toHex(snapBytes(a)) === toHex(snapBytes(b));
}

/** The rule (after RecordClosed and well-formedness) that refuses `segment`, if any. */
export function ruleBroken(state: RecordState, segment: Segment): ErrorCodeT | undefined {
  if (!MAY_FOLLOW[segment.kind].includes(state.last)) return 'PhaseViolation';
  if (segment.kind === 'resumed' && state.park !== undefined) {
    if (!sameSnapshot(state.park.snapshot, segment.snapshot)) return 'SnapshotMismatch';
    if (state.park.manifest !== segment.manifest) return 'ManifestMismatch';
    if (BigInt(segment.idle_uj) === 0n) return 'ZeroIdleEnergy';
  }
  return undefined;
}

export function afterAppend(state: RecordState, segment: Segment): RecordState {
  const park =
    segment.kind === 'suspended' ? { snapshot: segment.snapshot, manifest: segment.manifest } : state.park;
  return { last: segment.kind, park };
}

export function phaseOf(state: RecordState): PhaseT {
  if (state.last === 'suspended') return 'parked';
  if (state.last === 'closed') return 'closed';
  return 'active';
}
