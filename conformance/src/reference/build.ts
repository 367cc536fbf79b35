// The reference `build`: apply ops.json to a new record, refusing an op the way a host must
// (the record as it stood is reported, unchanged). An `execute` op may carry its attestation body: it is
// read with the op (a malformed body makes the op unreadable), then, after the phase rules, bound to this
// record at this position and its signature checked (rules 6–8); an op without a body may not name an
// address an earlier op bundled. Bodies go to the wire form's `attestations`, which is absent without any.
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
import { attestRuleBroken, type ReferenceVariant, SPEC, trustedSigner } from './attest-rules.js';
import { Body, type BodyT } from './attestation.js';
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
  if (parsed.data.op === 'execute' && 'body' in parsed.data && !Body.safeParse(parsed.data.body).success)
    return 'MalformedRecord';
  const segment = segmentOf(parsed.data);
  if (
    (segment.kind === 'suspended' || segment.kind === 'resumed') &&
    snapshotForm(segment.snapshot) === 'malformed'
  )
    return 'MalformedSnapshot';
  return segment;
}

export function referenceBuild(input: unknown, variant: ReferenceVariant = SPEC): BuildOutcome {
  const { unit_id, grants_id, ops } = OpsInput.parse(input);
  let head = genesis(unit_id, grants_id);
  let state = EMPTY_STATE;
  const segments: WireSegmentT[] = [];
  const bundle = new Map<string, BodyT>();
  const bindingRules = variant.rules.filter((r) => r !== trustedSigner);
  for (const [index, raw] of ops.entries()) {
    const refuse = (error: ErrorCodeT): BuildOutcome => ({
      refused: { error, index, length: segments.length, head },
    });
    if (isClosed(state)) return refuse('RecordClosed');
    const segment = parseOp(raw);
    if (typeof segment === 'string') return refuse(segment);
    const broken = ruleBroken(state, segment);
    if (broken !== undefined) return refuse(broken);
    let body: BodyT | undefined;
    if (segment.kind === 'executed') {
      const carried = typeof raw === 'object' && raw !== null && 'body' in raw;
      if (carried) {
        const site = {
          ...{ unitId: unit_id, grantsId: grants_id, headBefore: head, address: segment.attestation },
          ...{ bundled: true, raw: (raw as { body: unknown }).body, trustKeys: undefined },
        };
        const checked = attestRuleBroken(site, variant, bindingRules);
        if (checked.error !== undefined) return refuse(checked.error);
        body = checked.body;
      } else if (bundle.has(segment.attestation)) return refuse('AttestationMismatch');
    }
    head = advance(head, segment);
    state = afterAppend(state, segment);
    segments.push({ ...segment, head });
    if (body !== undefined && segment.kind === 'executed') bundle.set(segment.attestation, body);
  }
  const wire: Wire = { format: FORMAT, unit_id, grants_id, segments, head };
  return { built: bundle.size === 0 ? wire : { ...wire, attestations: Object.fromEntries(bundle) } };
}
