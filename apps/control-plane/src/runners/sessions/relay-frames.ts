// The session relay's frames (relay.ts): their kinds, their JSON bodies and how a refusal travels in one.
import { encodeBytes, isPlacementError } from '@everdict/placement';
import { z } from 'zod';

export type Kind =
  | 'call'
  | 'result'
  | 'open'
  | 'opened'
  | 'in'
  | 'out'
  | 'err'
  | 'eof'
  | 'resize'
  | 'kill'
  | 'exit'
  | 'ack'
  | 'alive';

export const CallFrame = z.object({
  runnerId: z.string().min(1),
  op: z.string(),
  args: z.unknown(),
  timeoutMs: z.number().int().positive(),
});
export const OpenFrame = z.object({ runnerId: z.string().min(1), args: z.unknown() });
export const ResultFrame = z.object({
  ok: z.boolean(),
  value: z.unknown().optional(),
  error: z
    .object({ code: z.string(), message: z.string(), detail: z.record(z.string(), z.unknown()).default({}) })
    .optional(),
});
export const ExitFrame = z.object({
  exitCode: z.number().int().nullable().optional(),
  signal: z.string().nullable().optional(),
  error: ResultFrame.shape.error,
});
export const AckFrame = z.object({ bytes: z.number().nonnegative() });
export const ResizeFrame = z.object({ cols: z.number().int().positive(), rows: z.number().int().positive() });

export const jsonBody = (v: unknown): Buffer => Buffer.from(JSON.stringify(v), 'utf8');
export const parseBody = <T>(schema: z.ZodType<T>, body: Buffer): T =>
  schema.parse(JSON.parse(body.toString('utf8')));

/** A refusal as the frame carries it (the runner's own problem shape; bytes in its detail as `{$bytes}`). */
export function problemOf(e: unknown): { code: string; message: string; detail: Record<string, unknown> } {
  if (isPlacementError(e))
    return { code: e.code, message: e.message, detail: encodeBytes(e.detail) as Record<string, unknown> };
  return { code: 'internal', message: e instanceof Error ? e.message : String(e), detail: {} };
}
