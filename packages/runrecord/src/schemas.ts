// The zod schemas of the wire form's primitives, shared by the record (wire.ts), the ops of `build`
// (ops.ts) and the attestation bundle (bundle.ts).
import * as z from 'zod';
import { isWellFormedString, parseU64Decimal } from './bytes.js';
import { CLOSE_REASONS, IDLE_PROVENANCES } from './types.js';

export const addrSchema = z.string().regex(/^[0-9a-f]{64}$/, 'not an address (64 lowercase hex)');
export const callIdSchema = z.string().refine(isWellFormedString, 'not a well-formed string');
export const u64Schema = z
  .string()
  .refine((s) => parseU64Decimal(s) !== undefined, 'not a canonical u64 decimal')
  .transform((s) => BigInt(s));
export const snapshotSchema = z.strictObject({
  root: addrSchema.optional(),
  memory: addrSchema.optional(),
  transcript: addrSchema.optional(),
});
export const accountSchema = z.strictObject({
  dispatched: z.array(callIdSchema),
  resolved: z.array(callIdSchema),
});
export const provenanceSchema = z.enum(IDLE_PROVENANCES as ['measured', 'estimated']);
export const reasonSchema = z.enum(CLOSE_REASONS as ['completed', 'abandoned', 'failed', 'cancelled']);

export function zodProblem(e: z.ZodError): string {
  const i = e.issues[0];
  return i ? `${i.path.join('.') || '(root)'}: ${i.message}` : 'invalid';
}
