// Turns the hand-written cases into vectors: heads come from the reference encoder (the spec's byte
// layout), and every hand-stated expectation is checked against the reference before it is written, so
// a vector can only say what both the case's author and the spec's bytes say.
import { Op, type OpsInput } from '../contract/schemas.js';
import { referenceBuild, segmentOf } from '../reference/build.js';
import { concat, fromHex, H, toHex } from '../reference/bytes.js';
import { chainSegments, genesis, genesisPreimage } from '../reference/chain.js';
import { referenceVerify } from '../reference/verify.js';
import { applyPatch } from '../vectors/json-patch.js';
import { Vector, type VectorT, type VerifyExpectT } from '../vectors/schema.js';
import { ADDRESS_BOOK, GRANTS_A, UNIT_A } from './addresses.js';
import { type BuildCase, type Case, type ForgedCase, RECORD_HEAD, type TamperCase } from './define.js';

class CaseError extends Error {
  constructor(name: string, message: string) {
    super(`case ${name}: ${message}`);
  }
}

/** Every field the expectation states must equal the reference's output. */
function agree(c: Case, expected: VerifyExpectT, actual: unknown): void {
  const a = actual as Record<string, unknown>;
  for (const [k, v] of Object.entries(expected)) {
    const got = k === 'index' && v === null ? (a.index ?? null) : a[k];
    if (got !== v) throw new CaseError(c.name, `expected ${k}=${String(v)}, reference says ${String(got)}`);
  }
}

function opsOf(c: Case): ReturnType<typeof OpsInput.parse> {
  return { unit_id: c.unit ?? UNIT_A, grants_id: c.grants ?? GRANTS_A, ops: [...c.ops] };
}

function buildVector(c: BuildCase): VectorT {
  const ops = opsOf(c);
  const outcome = referenceBuild(ops);
  const base = { name: c.name, class: c.class, description: c.description, kind: 'build' as const, ops };
  if ('refused' in outcome) {
    const r = outcome.refused;
    if (c.refuse === undefined)
      throw new CaseError(c.name, `reference refuses with ${r.error} at ${r.index}`);
    if (c.refuse.error !== r.error || c.refuse.index !== r.index)
      throw new CaseError(
        c.name,
        `expected ${c.refuse.error}@${c.refuse.index}, reference ${r.error}@${r.index}`,
      );
    return { ...base, expect: { status: 'refused', ...r } };
  }
  if (c.refuse !== undefined) throw new CaseError(c.name, 'reference builds a case expected to be refused');
  const wire = outcome.built;
  const verified = referenceVerify(wire);
  if (!verified.ok) throw new CaseError(c.name, `reference does not verify its own build: ${verified.error}`);
  agree(c, { ok: true, ...c.verify }, verified);
  // The spec names no phase for a record with no segments, so none is asserted there.
  const expect: VerifyExpectT = wire.segments.length === 0 ? { ...verified, phase: undefined } : verified;
  const pinned = (c.pinned ?? []).map((p) => {
    const prev_head = p.index === 0 ? genesis(ops.unit_id, ops.grants_id) : wire.segments[p.index - 1]?.head;
    const head = wire.segments[p.index]?.head;
    if (prev_head === undefined || head === undefined) throw new CaseError(c.name, `no segment ${p.index}`);
    if (toHex(H(concat(fromHex(prev_head), fromHex(p.segment_hex)))) !== head)
      throw new CaseError(c.name, `hand-written layout of segment ${p.index} disagrees with the reference`);
    return { index: p.index, layout: p.layout, prev_head, segment_hex: p.segment_hex, head };
  });
  return {
    ...base,
    expect: {
      status: 'built',
      head: wire.head,
      length: wire.segments.length,
      heads: wire.segments.map((s) => s.head),
      wire,
    },
    ...(pinned.length > 0 ? { pinned } : {}),
    verify: { expect },
  };
}

function tamperVector(c: TamperCase): VectorT {
  const ops = opsOf(c);
  const outcome = referenceBuild(ops);
  if (!('built' in outcome)) throw new CaseError(c.name, 'the record to tamper with must build');
  const base_head = outcome.built.head;
  const expect_head = c.expect_head === RECORD_HEAD ? base_head : c.expect_head;
  const tampered = applyPatch(outcome.built, c.patch);
  agree(c, c.expect, referenceVerify(tampered, expect_head));
  return {
    name: c.name,
    class: c.class,
    description: c.description,
    kind: 'tamper',
    ops,
    base_head,
    patch: [...c.patch],
    ...(expect_head === undefined ? {} : { expect_head }),
    expect: c.expect,
  };
}

function forgedVector(c: ForgedCase): VectorT {
  const { unit_id, grants_id, ops } = opsOf(c);
  const wire = applyPatch(
    chainSegments(
      unit_id,
      grants_id,
      ops.map((o) => segmentOf(Op.parse(o))),
    ),
    c.patch ?? [],
  );
  agree(c, c.expect, referenceVerify(wire, c.expect_head));
  return {
    name: c.name,
    class: c.class,
    description: c.description,
    kind: 'verify',
    wire,
    ...(c.expect_head === undefined ? {} : { expect_head: c.expect_head }),
    expect: c.expect,
  };
}

export function vectorOf(c: Case): VectorT {
  const v = c.kind === 'build' ? buildVector(c) : c.kind === 'tamper' ? tamperVector(c) : forgedVector(c);
  return Vector.parse(v);
}

/** vectors/addresses.json: the named addresses and the genesis of (UNIT_A, GRANTS_A), for other languages. */
export function addressBook(): unknown {
  return {
    addresses: ADDRESS_BOOK,
    genesis: {
      unit_id: UNIT_A,
      grants_id: GRANTS_A,
      preimage_hex: toHex(genesisPreimage(UNIT_A, GRANTS_A)),
      head: genesis(UNIT_A, GRANTS_A),
    },
  };
}
