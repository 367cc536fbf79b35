// LOG vectors (spec/witnessed-heads.md, "Command-line contract"): one invocation of `<impl> <command>`
// with a given standard input and the exact exit code and JSON line it must print.
import { z } from 'zod';

const Hex = z.string().regex(/^[0-9a-f ]*$/);

/** A hand-written hash preimage: H(preimage_hex) must equal `hash` (spaces are cosmetic). */
export const LogPinned = z.object({
  layout: z.string(),
  preimage_hex: Hex,
  hash: z.string().regex(/^[0-9a-f]{64}$/),
});

export const LogExpect = z.union([
  /** exit 0 or 1: stdout is exactly this one JSON object (no field more or less). */
  z.object({ exit: z.union([z.literal(0), z.literal(1)]), output: z.record(z.string(), z.unknown()) }),
  /** exit 2 (usage): nothing about stdout is asserted. */
  z.object({ exit: z.literal(2) }),
]);

export const LogVector = z
  .object({
    name: z.string().regex(/^[a-z0-9-]+$/),
    class: z.literal('LOG'),
    description: z.string(),
    kind: z.literal('log'),
    command: z.string().regex(/^[a-z-]+$/),
    /** Written to stdin as JSON. */
    input: z.unknown().optional(),
    /** Written to stdin verbatim (for input that is not JSON). */
    stdin: z.string().optional(),
    expect: LogExpect,
    pinned: z.array(LogPinned).optional(),
  })
  .refine((v) => (v.input === undefined) !== (v.stdin === undefined), 'exactly one of input and stdin');

export type LogVectorT = z.infer<typeof LogVector>;
export type LogExpectT = z.infer<typeof LogExpect>;

/** The standard input a LOG vector writes. */
export function logStdin(v: Pick<LogVectorT, 'input' | 'stdin'>): string {
  return v.stdin ?? JSON.stringify(v.input);
}
