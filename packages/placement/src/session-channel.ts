// The session channel's frames: how a control plane drives a placement driver held by a runner over one
// WebSocket the runner opens (outbound only). Both ends import this one definition.
// Text frames are JSON (below); binary frames carry a terminal stream's bytes:
//   [kind: u8 — 0 stdin (control plane → runner), 1 stdout, 2 stderr (runner → control plane)][sid: u32 BE][bytes]
// Bytes inside JSON (snapshots, exec output, partial output in an error's detail) are `{"$bytes": base64}`.
import { z } from 'zod';

/** Operations the control plane calls on a runner's placement driver. */
export const SESSION_OPS = [
  'provision',
  'exec',
  'stream',
  'snapshot',
  'restore',
  'dispose',
  'reap',
  'held',
] as const;
export const SessionOp = z.enum(SESSION_OPS);
export type SessionOp = z.infer<typeof SessionOp>;

/** The largest frame either side accepts (a workspace snapshot travels in one frame, base64). */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;

export const ChannelProblem = z.object({
  code: z.string().max(100),
  message: z.string().max(10_000),
  detail: z.record(z.string(), z.unknown()).default({}),
});
export type ChannelProblem = z.infer<typeof ChannelProblem>;

/** Runner → control plane. */
export const RunnerFrame = z.discriminatedUnion('t', [
  z.object({
    t: z.literal('hello'),
    /** The driver's describe() (checked loosely: the control plane only reads `driver`). */
    description: z.object({ driver: z.string().min(1).max(32) }).passthrough(),
    images: z.array(z.string().min(1).max(1000)).min(1).max(1000),
    slots: z.int().min(1).max(10_000),
  }),
  /** `ok: true` with the operation's `value`, or `ok: false` with the driver's refusal. */
  z.object({
    t: z.literal('result'),
    id: z.string().min(1).max(100),
    ok: z.boolean(),
    value: z.unknown().optional(),
    error: ChannelProblem.optional(),
  }),
  z.object({
    t: z.literal('exit'),
    sid: z.int().nonnegative(),
    exitCode: z.int().nullable().optional(),
    signal: z.string().nullable().optional(),
    error: ChannelProblem.optional(),
  }),
]);
export type RunnerFrame = z.infer<typeof RunnerFrame>;

/** Control plane → runner. */
export const ControlFrame = z.discriminatedUnion('t', [
  z.object({ t: z.literal('call'), id: z.string().min(1).max(100), op: SessionOp, args: z.unknown() }),
  z.object({
    t: z.literal('resize'),
    sid: z.int().nonnegative(),
    cols: z.int().positive(),
    rows: z.int().positive(),
  }),
  z.object({ t: z.literal('eof'), sid: z.int().nonnegative() }),
  z.object({ t: z.literal('kill'), sid: z.int().nonnegative() }),
]);
export type ControlFrame = z.infer<typeof ControlFrame>;

/** A binary frame: one stream's bytes. */
export function streamFrame(kind: number, sid: number, bytes: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(kind, 0);
  head.writeUInt32BE(sid, 1);
  return Buffer.concat([head, bytes]);
}

export function parseStreamFrame(buf: Buffer): { kind: number; sid: number; bytes: Buffer } | null {
  if (buf.length < 5) return null;
  return { kind: buf.readUInt8(0), sid: buf.readUInt32BE(1), bytes: buf.subarray(5) };
}

/** Uint8Arrays (anywhere in a value) → `{$bytes: base64}`, for JSON. */
export function encodeBytes(v: unknown): unknown {
  if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString('base64') };
  if (Array.isArray(v)) return v.map(encodeBytes);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = encodeBytes(x);
    return out;
  }
  return v;
}

/** The inverse of encodeBytes. */
export function decodeBytes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(decodeBytes);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.$bytes === 'string' && Object.keys(o).length === 1)
      return new Uint8Array(Buffer.from(o.$bytes, 'base64'));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) out[k] = decodeBytes(x);
    return out;
  }
  return v;
}
