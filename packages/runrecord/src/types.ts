// The record's vocabulary, in the spec's words. Addresses are 64-char lowercase hex; u64 fields are bigint.
import type { AttestationBody } from './attestation.js';
import type { Hex } from './bytes.js';

export type { Hex };

export const FORMAT = 'sandbox.runrecord/1';

/**
 * A snapshot reference as offered by a caller or read from the wire: flat, like the wire form. Only two
 * shapes are well formed — an image park (`root`, optional `memory`) or a transcript park (`transcript`
 * alone); anything else is refused with `MalformedSnapshot`.
 */
export interface SnapshotInput {
  readonly root?: Hex | undefined;
  readonly memory?: Hex | undefined;
  readonly transcript?: Hex | undefined;
}

/** A well-formed snapshot reference: exactly one of the two forms. */
export type SnapshotRef = ImageSnapshot | TranscriptSnapshot;
export interface ImageSnapshot {
  readonly root: Hex;
  readonly memory?: Hex;
  readonly transcript?: undefined;
}
export interface TranscriptSnapshot {
  readonly transcript: Hex;
  readonly root?: undefined;
  readonly memory?: undefined;
}

/** The calls an executed interval dispatched and the results it resolved, by call id, in recorded order. */
export interface Account {
  readonly dispatched: readonly string[];
  readonly resolved: readonly string[];
}

export type IdleProvenance = 'measured' | 'estimated';
export type CloseReason = 'completed' | 'abandoned' | 'failed' | 'cancelled';
export type SegmentKind = 'executed' | 'suspended' | 'resumed' | 'closed';
/** Where a record stands: `active` at genesis and after executed/resumed, `parked` after suspended. */
export type Phase = 'active' | 'parked' | 'closed';

export interface ExecutedBody {
  readonly kind: 'executed';
  readonly attestation: Hex;
  /** Absent: not accounted. Present with empty lists: accounted, no calls. They hash differently. */
  readonly account?: Account;
}
export interface SuspendedBody {
  readonly kind: 'suspended';
  readonly snapshot: SnapshotRef;
  readonly manifest: Hex;
}
export interface ResumedBody {
  readonly kind: 'resumed';
  readonly snapshot: SnapshotRef;
  readonly manifest: Hex;
  readonly idleUj: bigint;
  readonly idleProvenance: IdleProvenance;
}
export interface ClosedBody {
  readonly kind: 'closed';
  readonly reason: CloseReason;
}
/** A segment before it is chained. */
export type SegmentBody = ExecutedBody | SuspendedBody | ResumedBody | ClosedBody;

type Headed<T> = T & { readonly head: Hex };
/** A chained segment: its body and the head after it. */
export type Segment = Headed<ExecutedBody> | Headed<SuspendedBody> | Headed<ResumedBody> | Headed<ClosedBody>;

/** A whole record, decoded. `head` is the record's final head (genesis head when it has no segment). */
export interface RunRecord {
  readonly unitId: Hex;
  readonly grantsId: Hex;
  readonly segments: readonly Segment[];
  readonly head: Hex;
  /**
   * The attestation bundle, by address (absent: the record has none — `{}` on the wire is an empty map).
   * It is not covered by the heads: rules 6–9 bind each body to its segment instead.
   */
  readonly attestations?: ReadonlyMap<Hex, AttestationBody> | undefined;
}

export const IDLE_PROVENANCE_BYTE: Record<IdleProvenance, number> = { measured: 0x01, estimated: 0x02 };
export const CLOSE_REASON_BYTE: Record<CloseReason, number> = {
  completed: 0x01,
  abandoned: 0x02,
  failed: 0x03,
  cancelled: 0x04,
};
export const CLOSE_REASONS = Object.keys(CLOSE_REASON_BYTE) as CloseReason[];
export const IDLE_PROVENANCES = Object.keys(IDLE_PROVENANCE_BYTE) as IdleProvenance[];
