// Snapshot references: the two forms a park may retain, their canonical bytes `snap`, and identity.
import { type ByteWriter, isAddr } from './bytes.js';
import { RunRecordError } from './errors.js';
import type { SnapshotRef } from './types.js';

export type SnapshotForm = 'image' | 'image+memory' | 'transcript';

/** The outcome of writing a reference: written, a field that is not an address, or neither/both forms. */
export type SnapshotWrite = 'ok' | 'bad-field' | 'bad-form';

function field(o: object, k: 'root' | 'memory' | 'transcript'): unknown {
  return (o as Record<string, unknown>)[k];
}

/**
 * Writes `snap` for a reference. Field problems (not an object, not hex) are reported before form problems,
 * so a segment with both is `MalformedRecord`, like any other field that cannot be read.
 */
export function writeSnapshot(w: ByteWriter, snap: unknown): SnapshotWrite {
  if (typeof snap !== 'object' || snap === null || Array.isArray(snap)) return 'bad-field';
  const root = field(snap, 'root');
  const memory = field(snap, 'memory');
  const transcript = field(snap, 'transcript');
  // Hex is validated while it is decoded (w.addr), so the well-formed path reads each address once.
  if (root !== undefined && transcript === undefined) {
    w.u8(0x01);
    if (!w.addr(root)) return 'bad-field';
    if (memory === undefined) {
      w.u8(0x00);
    } else {
      w.u8(0x01);
      if (!w.addr(memory)) return 'bad-field';
    }
    return 'ok';
  }
  if (transcript !== undefined && root === undefined && memory === undefined) {
    w.u8(0x02);
    return w.addr(transcript) ? 'ok' : 'bad-field';
  }
  const present = [root, memory, transcript].filter((x) => x !== undefined);
  return present.every(isAddr) ? 'bad-form' : 'bad-field';
}

/** Why a reference is malformed, in words, or undefined if it is well formed (fields assumed hex). */
export function snapshotFormProblem(snap: SnapshotRef | Record<string, unknown>): string | undefined {
  const has = (k: string) => (snap as Record<string, unknown>)[k] !== undefined;
  if (has('root') && has('transcript')) return 'names both forms (root and transcript)';
  if (has('transcript') && has('memory')) return 'a transcript beside a memory image';
  if (!has('root') && !has('transcript')) return 'names neither form (no root, no transcript)';
  return undefined;
}

/** Validates a caller's reference and returns a clean, frozen copy of it. */
export function toSnapshotRef(snap: unknown): SnapshotRef {
  if (typeof snap !== 'object' || snap === null || Array.isArray(snap)) {
    throw new RunRecordError('MalformedRecord', 'snapshot is not an object');
  }
  for (const k of ['root', 'memory', 'transcript'] as const) {
    const v = field(snap, k);
    if (v !== undefined && !isAddr(v))
      throw new RunRecordError('MalformedRecord', `snapshot.${k} is not an address`);
  }
  const problem = snapshotFormProblem(snap as Record<string, unknown>);
  if (problem) throw new RunRecordError('MalformedSnapshot', problem);
  return normalizeSnapshot(snap as SnapshotRef);
}

/** A frozen copy holding only the fields of its form (caller guarantees it is well formed). */
export function normalizeSnapshot(s: SnapshotRef): SnapshotRef {
  if (s.transcript !== undefined) return Object.freeze({ transcript: s.transcript });
  return Object.freeze(s.memory === undefined ? { root: s.root } : { root: s.root, memory: s.memory });
}

/** Content identity: same form, same addresses. An image and a transcript over one address differ. */
export function sameSnapshot(a: SnapshotRef, b: SnapshotRef): boolean {
  return a.root === b.root && a.memory === b.memory && a.transcript === b.transcript;
}

export function snapshotForm(s: SnapshotRef): SnapshotForm {
  if (s.transcript !== undefined) return 'transcript';
  return s.memory === undefined ? 'image' : 'image+memory';
}
