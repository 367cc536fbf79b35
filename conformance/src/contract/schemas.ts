// The shapes of the command-line contract (spec/runrecord.md, "Wire form" and "Command-line contract"),
// parsed with zod. The suite parses everything an implementation prints through these.
import { z } from 'zod';

export const U64_MAX = (1n << 64n) - 1n;

/** An address in JSON: 64 lowercase hex chars. */
export const Addr = z.string().regex(/^[0-9a-f]{64}$/, 'an address is 64 lowercase hex chars');

/** A u64 as a decimal string. */
export const U64Decimal = z
  .string()
  .regex(/^[0-9]+$/, 'a u64 is a decimal string')
  .refine((s) => BigInt(s) <= U64_MAX, 'exceeds u64');

export const Provenance = z.enum(['measured', 'estimated']);
export const CloseReason = z.enum(['completed', 'abandoned', 'failed', 'cancelled']);
export const AccountVerdict = z.enum(['non_blocking', 'blocking', 'unreadable', 'no_verdict']);
export const Phase = z.enum(['active', 'parked', 'closed']);
export const ErrorCode = z.enum([
  'HeadMismatch',
  'PhaseViolation',
  'RecordClosed',
  'SnapshotMismatch',
  'ManifestMismatch',
  'MalformedSnapshot',
  'ZeroIdleEnergy',
  'MalformedRecord',
  'AttestationMismatch',
  'BadSignature',
  'UntrustedAttestation',
]);

/** A snapshot reference is flat; which fields are present decides its form (or that it is malformed). */
export const SnapshotRef = z.object({
  root: Addr.optional(),
  memory: Addr.optional(),
  transcript: Addr.optional(),
});
export const Account = z.object({ dispatched: z.array(z.string()), resolved: z.array(z.string()) });

export const ExecutedBody = z.object({ attestation: Addr, account: Account.optional() });
/** An `execute` op may carry its attestation body (checked by the implementation, not by this schema). */
export const ExecuteOp = ExecutedBody.extend({ op: z.literal('execute'), body: z.unknown().optional() });
export const SuspendedBody = z.object({ snapshot: SnapshotRef, manifest: Addr });
export const ResumedBody = z.object({
  snapshot: SnapshotRef,
  manifest: Addr,
  idle_uj: U64Decimal,
  idle_provenance: Provenance,
});
export const ClosedBody = z.object({ reason: CloseReason });

/** A segment's content, without its head. */
export const SegmentContent = z.discriminatedUnion('kind', [
  ExecutedBody.extend({ kind: z.literal('executed') }),
  SuspendedBody.extend({ kind: z.literal('suspended') }),
  ResumedBody.extend({ kind: z.literal('resumed') }),
  ClosedBody.extend({ kind: z.literal('closed') }),
]);

export const WireSegment = z.discriminatedUnion('kind', [
  ExecutedBody.extend({ kind: z.literal('executed'), head: Addr }),
  SuspendedBody.extend({ kind: z.literal('suspended'), head: Addr }),
  ResumedBody.extend({ kind: z.literal('resumed'), head: Addr }),
  ClosedBody.extend({ kind: z.literal('closed'), head: Addr }),
]);

export const WireHeader = z.object({
  format: z.literal('sandbox.runrecord/1'),
  unit_id: Addr,
  grants_id: Addr,
  segments: z.array(z.unknown()),
  head: Addr,
});

/** `attestations` is kept as printed, so that a build's bundle is compared exactly (or its absence). */
export const WireRecord = WireHeader.extend({
  segments: z.array(WireSegment),
  attestations: z.unknown().optional(),
});

export const Op = z.discriminatedUnion('op', [
  ExecuteOp,
  SuspendedBody.extend({ op: z.literal('suspend') }),
  ResumedBody.extend({ op: z.literal('resume') }),
  ClosedBody.extend({ op: z.literal('close') }),
]);

/** `ops.json`, the input of `build`; each op is parsed on its own so a bad one is blamed by index. */
export const OpsInput = z.object({ unit_id: Addr, grants_id: Addr, ops: z.array(z.unknown()) });

export const BuildRefusal = z.object({
  error: ErrorCode,
  index: z.number().int().nonnegative(),
  length: z.number().int().nonnegative(),
  head: Addr,
});

/** Exact sums: decimal strings that may exceed u64. */
const Decimal = z.string().regex(/^(0|[1-9][0-9]*)$/);
export const Cost = z.object({
  active_uj: Decimal,
  idle_uj: Decimal,
  total_uj: Decimal,
  unresolved: z.number().int().nonnegative(),
});

/**
 * `cost` and `signed_by` come with the attestation bundle; the classes before ATTEST do not assert them, so
 * they are optional here and asserted wherever a vector states them.
 */
export const VerifySuccess = z.object({
  ok: z.literal(true),
  head: Addr,
  length: z.number().int().nonnegative(),
  idle_uj: z.string().regex(/^[0-9]+$/),
  account: AccountVerdict,
  phase: Phase,
  cost: Cost.optional(),
  signed_by: z.array(z.string()).optional(),
});
export const VerifyFailure = z.object({
  ok: z.literal(false),
  error: ErrorCode,
  index: z.number().int().nonnegative().optional(),
});
export const VerifyOutput = z.discriminatedUnion('ok', [VerifySuccess, VerifyFailure]);

export type Snapshot = z.infer<typeof SnapshotRef>;
export type AccountT = z.infer<typeof Account>;
export type Segment = z.infer<typeof SegmentContent>;
export type WireSegmentT = z.infer<typeof WireSegment>;
export type Wire = z.infer<typeof WireRecord>;
export type OpT = z.infer<typeof Op>;
export type ErrorCodeT = z.infer<typeof ErrorCode>;
export type VerdictT = z.infer<typeof AccountVerdict>;
export type PhaseT = z.infer<typeof Phase>;
export type BuildRefusalT = z.infer<typeof BuildRefusal>;
export type VerifyOutputT = z.infer<typeof VerifyOutput>;
export type CostT = z.infer<typeof Cost>;
