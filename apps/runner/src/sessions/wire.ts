// The session channel's frames, the runner's side (apps/control-plane/src/runners/sessions/wire.ts is the
// control plane's copy; the two apps share no source). Text frames are JSON; binary frames carry a terminal
// stream's bytes: [kind: u8 — 0 stdin, 1 stdout, 2 stderr][sid: u32 BE][bytes]. Bytes inside JSON
// (snapshots, exec output, partial output in an error's detail) are `{"$bytes": base64}`.
import { z } from 'zod';

export const MAX_FRAME_BYTES = 256 * 1024 * 1024;
export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;

export const SessionOp = z.enum([
  'provision',
  'exec',
  'stream',
  'snapshot',
  'restore',
  'dispose',
  'reap',
  'held',
]);
export type SessionOp = z.infer<typeof SessionOp>;

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

export interface Problem {
  code: string;
  message: string;
  detail: Record<string, unknown>;
}

/** Runner → control plane. */
export type RunnerFrame =
  | { t: 'hello'; description: unknown; images: string[]; slots: number }
  | { t: 'result'; id: string; ok: true; value: unknown }
  | { t: 'result'; id: string; ok: false; error: Problem }
  | { t: 'exit'; sid: number; exitCode?: number | null; signal?: string | null; error?: Problem };

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
