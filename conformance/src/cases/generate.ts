// Turns the hand-written cases into vectors: heads come from the reference encoder (the spec's byte
// layout), and every hand-stated expectation is checked against the reference before it is written, so
// a vector can only say what both the case's author and the spec's bytes say.
import { Op, type OpsInput, type VerifyOutputT } from '../contract/schemas.js';
import { attBytes, Body, signedMessage } from '../reference/attestation.js';
import { referenceBuild, segmentOf } from '../reference/build.js';
import { concat, fromHex, H, toHex } from '../reference/bytes.js';
import { chainSegments, genesis, genesisPreimage } from '../reference/chain.js';
import { referenceVerify } from '../reference/verify.js';
import { applyPatch } from '../vectors/json-patch.js';
import { Vector, type VectorT, type VerifyExpectT } from '../vectors/schema.js';
import { ADDRESS_BOOK, GRANTS_A, UNIT_A } from './addresses.js';
import { SIGNER_1, SIGNER_2 } from './attest-fixtures.js';
import { type BuildCase, type Case, type ForgedCase, RECORD_HEAD, type TamperCase } from './define.js';
import { logVectorOf } from './generate-log.js';
import type { LogCase } from './log-define.js';

class CaseError extends Error {
  constructor(name: string, message: string) {
    super(`case ${name}: ${message}`);
  }
}

/** Every field the expectation states must equal the reference's output (objects and lists as JSON). */
function agree(c: Case, expected: Record<string, unknown>, actual: unknown): void {
  const a = actual as Record<string, unknown>;
  for (const [k, v] of Object.entries(expected)) {
    const got = k === 'index' && v === null ? (a.index ?? null) : a[k];
    if (JSON.stringify(got) !== JSON.stringify(v))
      throw new CaseError(
        c.name,
        `expected ${k}=${JSON.stringify(v)}, reference says ${JSON.stringify(got)}`,
      );
  }
}

/** Only ATTEST asserts `cost` and `signed_by`: the earlier classes' vectors stay what they were. */
type Summary = Extract<VerifyExpectT, { ok: true }>;
function summaryFor(c: Case, verified: Extract<VerifyOutputT, { ok: true }>): Summary {
  if (c.class === 'ATTEST') return verified;
  const { cost: _cost, signed_by: _signers, ...rest } = verified;
  return rest;
}

const trustOf = (c: Case) => (c.trust_keys === undefined ? {} : { trust_keys: [...c.trust_keys] });

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
  const verified = referenceVerify(wire, { trustKeys: c.trust_keys });
  if (!verified.ok) throw new CaseError(c.name, `reference does not verify its own build: ${verified.error}`);
  agree(c, { ok: true, ...c.verify }, verified);
  // The spec names no phase for a record with no segments, so none is asserted there.
  const summary = summaryFor(c, verified);
  const expect: Summary = wire.segments.length === 0 ? { ...summary, phase: undefined } : summary;
  const pinned = (c.pinned ?? []).map((p) => {
    const prev_head = p.index === 0 ? genesis(ops.unit_id, ops.grants_id) : wire.segments[p.index - 1]?.head;
    const head = wire.segments[p.index]?.head;
    if (prev_head === undefined || head === undefined) throw new CaseError(c.name, `no segment ${p.index}`);
    if (toHex(H(concat(fromHex(prev_head), fromHex(p.segment_hex)))) !== head)
      throw new CaseError(c.name, `hand-written layout of segment ${p.index} disagrees with the reference`);
    return { index: p.index, layout: p.layout, prev_head, segment_hex: p.segment_hex, head };
  });
  const pinned_attestations = (c.pinned_attestations ?? []).map((p) => {
    const body = Body.parse((wire.attestations as Record<string, unknown> | undefined)?.[p.address]);
    if (toHex(H(fromHex(p.att_hex))) !== p.address || toHex(attBytes(body)) !== p.att_hex.replaceAll(' ', ''))
      throw new CaseError(c.name, `hand-written att layout of ${p.address} disagrees with the reference`);
    if (toHex(signedMessage(p.address)) !== p.signed_hex.replaceAll(' ', ''))
      throw new CaseError(c.name, `hand-written signed message of ${p.address} disagrees with the reference`);
    return { ...p };
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
    ...(pinned_attestations.length > 0 ? { pinned_attestations } : {}),
    verify: { expect, ...trustOf(c) },
  };
}

function tamperVector(c: TamperCase): VectorT {
  const ops = opsOf(c);
  const outcome = referenceBuild(ops);
  if (!('built' in outcome)) throw new CaseError(c.name, 'the record to tamper with must build');
  const base_head = outcome.built.head;
  const expect_head = c.expect_head === RECORD_HEAD ? base_head : c.expect_head;
  const tampered = applyPatch(outcome.built, c.patch);
  agree(c, c.expect, referenceVerify(tampered, { expectHead: expect_head, trustKeys: c.trust_keys }));
  return {
    name: c.name,
    class: c.class,
    description: c.description,
    kind: 'tamper',
    ops,
    base_head,
    patch: [...c.patch],
    ...(expect_head === undefined ? {} : { expect_head }),
    ...trustOf(c),
    expect: c.expect,
  };
}

/** The bundle of a forged record: each execute op's body under the op's address, then extra entries. */
function forgedBundle(c: ForgedCase, ops: readonly unknown[]): Record<string, unknown> | undefined {
  const bundle: Record<string, unknown> = {};
  for (const o of ops) {
    const op = o as { op?: unknown; attestation?: string; body?: unknown };
    if (op.op === 'execute' && 'body' in op && op.attestation !== undefined) bundle[op.attestation] = op.body;
  }
  Object.assign(bundle, c.attestations);
  return Object.keys(bundle).length === 0 && c.attestations === undefined ? undefined : bundle;
}

function forgedVector(c: ForgedCase): VectorT {
  const { unit_id, grants_id, ops } = opsOf(c);
  const chained = chainSegments(
    unit_id,
    grants_id,
    ops.map((o) => segmentOf(Op.parse(o))),
  );
  const bundle = forgedBundle(c, ops);
  const wire = applyPatch(
    bundle === undefined ? chained : { ...chained, attestations: bundle },
    c.patch ?? [],
  );
  agree(c, c.expect, referenceVerify(wire, { expectHead: c.expect_head, trustKeys: c.trust_keys }));
  return {
    name: c.name,
    class: c.class,
    description: c.description,
    kind: 'verify',
    wire,
    ...(c.expect_head === undefined ? {} : { expect_head: c.expect_head }),
    ...trustOf(c),
    expect: c.expect,
  };
}

export function vectorOf(c: Case | LogCase): VectorT {
  if (c.kind === 'log') return logVectorOf(c);
  const v = c.kind === 'build' ? buildVector(c) : c.kind === 'tamper' ? tamperVector(c) : forgedVector(c);
  return Vector.parse(v);
}

/**
 * vectors/addresses.json: the named addresses, the ATTEST signers and the genesis of (UNIT_A, GRANTS_A), for
 * other languages.
 */
export function addressBook(): unknown {
  return {
    addresses: ADDRESS_BOOK,
    signers: [SIGNER_1, SIGNER_2].map((s, i) => ({
      name: `SIGNER_${i + 1}`,
      secret_key: toHex(s.seed),
      public_key: s.key,
      meaning: `Ed25519 key whose 32 secret bytes are H("signer-${i + 1}") (public: for vectors only)`,
    })),
    genesis: {
      unit_id: UNIT_A,
      grants_id: GRANTS_A,
      preimage_hex: toHex(genesisPreimage(UNIT_A, GRANTS_A)),
      head: genesis(UNIT_A, GRANTS_A),
    },
  };
}
