// The reference `build`: apply ops.json to a new record, refusing an op the way a host must
// (the record as it stood is reported, unchanged).
import {
  type BuildRefusalT,
  type ErrorCodeT,
  Op,
  OpsInput,
  type OpT,
  type Segment,
  type Wire,
  type WireSegmentT,
} from '../contract/schemas.js';
import { advance, FORMAT, genesis } from './chain.js';
import { afterAppend, EMPTY_STATE, isClosed, ruleBroken } from './rules.js';
import { snapshotForm } from './segment.js';

export type BuildOutcome = { readonly built: Wire } | { readonly refused: BuildRefusalT };

export function segmentOf(op: OpT): Segment {
  switch (op.op) {
    case 'execute':
      return op.account === undefined
        ? { kind: 'executed', attestation: op.attestation }
        : { kind: 'executed', attestation: op.attestation, account: op.account };
    case 'suspend':
      return { kind: 'suspended', snapshot: op.snapshot, manifest: op.manifest };
    case 'resume':
      return {
        kind: 'resumed',
        snapshot: op.snapshot,
        manifest: op.manifest,
        idle_uj: op.idle_uj,
        idle_provenance: op.idle_provenance,
      };
    case 'close':
      return { kind: 'closed', reason: op.reason };
  }
}

/** Well-formedness of one op: MalformedRecord if it does not parse, MalformedSnapshot if its reference is. */
export function parseOp(raw: unknown): Segment | 'MalformedRecord' | 'MalformedSnapshot' {
  const parsed = Op.safeParse(raw);
  if (!parsed.success) return 'MalformedRecord';
  const segment = segmentOf(parsed.data);
  if (
    (segment.kind === 'suspended' || segment.kind === 'resumed') &&
    snapshotForm(segment.snapshot) === 'malformed'
  )
    return 'MalformedSnapshot';
  return segment;
}

export function referenceBuild(input: unknown): BuildOutcome {
  const { unit_id, grants_id, ops } = OpsInput.parse(input);
  let head = genesis(unit_id, grants_id);
  let state = EMPTY_STATE;
  const segments: WireSegmentT[] = [];
  for (const [index, raw] of ops.entries()) {
    const refuse = (error: ErrorCodeT): BuildOutcome => ({
      refused: { error, index, length: segments.length, head },
    });
    if (isClosed(state)) return refuse('RecordClosed');
    const segment = parseOp(raw);
    if (typeof segment === 'string') return refuse(segment);
    const broken = ruleBroken(state, segment);
    if (broken !== undefined) return refuse(broken);
    head = advance(head, segment);
    state = afterAppend(state, segment);
    segments.push({ ...segment, head });
  }
  return { built: { format: FORMAT, unit_id, grants_id, segments, head } };
}
