// Attestation bodies as the bundle carries them, and their bytes `att`, written straight from the spec's
// "Attestation object" and "Attestation bundle and signatures" sections.
import { z } from 'zod';
import { addr, ascii, concat, H, str, toHex, u8, u64 } from './bytes.js';

export const ATTESTATION_TAG = 'sandbox.attestation/1'; // 21 ASCII bytes
export const SIGNATURE_TAG = 'sandbox.attestation.sig/1'; // 25 ASCII bytes

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);
/** Decimal digits only, below 2^64 (no sign, no leading zero). */
const U64 = z
  .string()
  .regex(/^(0|[1-9][0-9]*)$/)
  .refine((s) => BigInt(s) < 2n ** 64n);

/** Exactly the listed fields: anything else (an unknown field, `audit_prev: null`, …) is malformed. */
export const Body = z.strictObject({
  unit_id: Hex64,
  grants_id: Hex64,
  record_head: Hex64,
  started_ms: U64,
  ended_ms: U64,
  active_uj: U64,
  provenance: z.enum(['measured', 'estimated']),
  meter: z.string().refine((s) => !LONE_SURROGATE.test(s), 'lone surrogate'),
  journal_root: Hex64,
  outcome: z.enum(['succeeded', 'failed', 'yielded', 'cancelled']),
  exit_code: z
    .number()
    .int()
    .min(-(2 ** 31))
    .max(2 ** 31 - 1),
  audit_prev: Hex64.optional(),
  signature: z
    .strictObject({ alg: z.literal('ed25519'), key: Hex64, sig: z.string().regex(/^[0-9a-f]{128}$/) })
    .optional(),
});
export type BodyT = z.infer<typeof Body>;

const PROVENANCE = { measured: 0x01, estimated: 0x02 } as const;
const OUTCOME = { succeeded: 0x01, failed: 0x02, yielded: 0x03, cancelled: 0x04 } as const;

function i32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setInt32(0, n, false);
  return out;
}

/** att = tag ‖ unit ‖ grants ‖ record_head ‖ u64 started ‖ u64 ended ‖ u64 active ‖ u8 provenance ‖ str meter ‖
 *  journal_root ‖ u8 outcome ‖ i32 exit_code ‖ (00 | 01 ‖ audit_prev). The signature is not part of it. */
export function attBytes(b: BodyT): Uint8Array {
  return concat(
    ascii(ATTESTATION_TAG),
    addr(b.unit_id),
    addr(b.grants_id),
    addr(b.record_head),
    u64(BigInt(b.started_ms)),
    u64(BigInt(b.ended_ms)),
    u64(BigInt(b.active_uj)),
    u8(PROVENANCE[b.provenance]),
    str(b.meter),
    addr(b.journal_root),
    u8(OUTCOME[b.outcome]),
    i32(b.exit_code),
    b.audit_prev === undefined ? u8(0x00) : concat(u8(0x01), addr(b.audit_prev)),
  );
}

export function attAddress(b: BodyT): string {
  return toHex(H(attBytes(b)));
}

/** What a signature signs: "sandbox.attestation.sig/1" ‖ address. */
export function signedMessage(address: string): Uint8Array {
  return concat(ascii(SIGNATURE_TAG), addr(address));
}
