// The vector file format (conformance/vectors/<class>/<name>.json). Language-neutral JSON; see README.
import { z } from 'zod';
import { AccountVerdict, Addr, Cost, ErrorCode, OpsInput, Phase } from '../contract/schemas.js';
import { LogVector } from './log-schema.js';

export const CLASSES = ['C6', 'C14', 'ACCOUNT', 'ENERGY', 'ATTEST', 'LOG'] as const;
export const VectorClass = z.enum(CLASSES);

/** What `verify` must print. Fields left out of an `ok: true` expectation are not asserted. */
export const VerifyExpect = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    head: Addr.optional(),
    length: z.number().int().nonnegative().optional(),
    idle_uj: z.string().optional(),
    account: AccountVerdict.optional(),
    phase: Phase.optional(),
    cost: Cost.optional(),
    /** Exactly these keys, in this order. */
    signed_by: z.array(Addr).optional(),
  }),
  z.object({
    ok: z.literal(false),
    error: ErrorCode,
    /** `null`: no segment is to blame, and the output must carry no index. */
    index: z.number().int().nonnegative().nullable(),
  }),
]);

/** A hand-written segment layout: H(prev_head ‖ segment_hex) must equal head, and the record's head at index. */
export const Pinned = z.object({
  index: z.number().int().nonnegative(),
  layout: z.string(),
  prev_head: Addr,
  segment_hex: z.string().regex(/^[0-9a-f ]+$/),
  head: Addr,
});

/**
 * A hand-written attestation layout `att`: BLAKE3(att_hex) must equal `address`; `signed_hex` is the message
 * a signature of it signs ("sandbox.attestation.sig/1" ‖ address).
 */
export const PinnedAttestation = z.object({
  address: Addr,
  layout: z.string(),
  att_hex: z.string().regex(/^[0-9a-f ]+$/),
  signed_hex: z.string().regex(/^[0-9a-f ]+$/),
});

/** Keys passed as `--trust-key` (rule 9), one flag each, in this order. */
const TrustKeys = z.array(Addr);

/** A subset of RFC 6902 JSON Patch, applied to the implementation's own `build` output. */
const Pointer = z.string().regex(/^(\/[^/]*)*$/);
export const PatchOp = z.discriminatedUnion('op', [
  z.object({ op: z.literal('replace'), path: Pointer, value: z.unknown() }),
  z.object({ op: z.literal('add'), path: Pointer, value: z.unknown() }),
  z.object({ op: z.literal('remove'), path: Pointer }),
  z.object({ op: z.literal('move'), from: Pointer, path: Pointer }),
]);

const Common = { name: z.string().regex(/^[a-z0-9-]+$/), class: VectorClass, description: z.string() };

export const BuildVector = z.object({
  ...Common,
  kind: z.literal('build'),
  ops: OpsInput,
  expect: z.discriminatedUnion('status', [
    z.object({
      status: z.literal('built'),
      head: Addr,
      length: z.number().int().nonnegative(),
      heads: z.array(Addr),
      wire: z.unknown(),
    }),
    z.object({
      status: z.literal('refused'),
      error: ErrorCode,
      index: z.number().int().nonnegative(),
      length: z.number().int().nonnegative(),
      head: Addr,
    }),
  ]),
  pinned: z.array(Pinned).optional(),
  pinned_attestations: z.array(PinnedAttestation).optional(),
  /** For a built record: `verify [--trust-key K]…` of the implementation's own output must print this. */
  verify: z.object({ expect: VerifyExpect, trust_keys: TrustKeys.optional() }).optional(),
});

export const TamperVector = z.object({
  ...Common,
  kind: z.literal('tamper'),
  ops: OpsInput,
  /** The head `build` must produce before the patch (a precondition, not the point of the case). */
  base_head: Addr,
  patch: z.array(PatchOp),
  expect_head: Addr.optional(),
  trust_keys: TrustKeys.optional(),
  expect: VerifyExpect,
});

export const VerifyVector = z.object({
  ...Common,
  kind: z.literal('verify'),
  wire: z.unknown(),
  expect_head: Addr.optional(),
  trust_keys: TrustKeys.optional(),
  expect: VerifyExpect,
});

export const Vector = z.discriminatedUnion('kind', [BuildVector, TamperVector, VerifyVector, LogVector]);

export type VectorT = z.infer<typeof Vector>;
export type VectorClassT = z.infer<typeof VectorClass>;
export type VerifyExpectT = z.infer<typeof VerifyExpect>;
export type PatchOpT = z.infer<typeof PatchOp>;
export type PinnedT = z.infer<typeof Pinned>;
export type PinnedAttestationT = z.infer<typeof PinnedAttestation>;
