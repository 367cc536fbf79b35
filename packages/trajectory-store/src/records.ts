// The small JSON records the store keeps beside the bytes (each parsed with zod when read back).
import { Timestamp } from '@everdict/run-model';
import { z } from 'zod';

const Digest = z.string().regex(/^blake3:[0-9a-f]{64}$/);
const Count = z.int().nonnegative();

/** Where an imported trajectory came from: the symmetric half of an export's outcome record. */
export const Provenance = z.strictObject({
  source: z.string().min(1).max(100),
  externalId: z.string().min(1).max(2000),
  pulledAt: Timestamp,
});
export type Provenance = z.infer<typeof Provenance>;

/**
 * A range of the sealed object: whole gzip members holding events [offset, offset + count). Its digest
 * is over the stored (compressed) bytes, so a page read checks what it serves without reading the rest.
 */
export const SealBlock = z.strictObject({
  offset: Count,
  count: Count,
  start: Count,
  length: Count,
  digest: Digest,
});
export type SealBlock = z.infer<typeof SealBlock>;

/** `seal.json`: its presence is what makes a trajectory sealed. */
export const SealRecord = z.strictObject({
  version: z.literal(1),
  trajectoryId: z.string().min(1),
  /** BLAKE3 of the uncompressed canonical JSONL (see canonical.ts). */
  digest: Digest,
  eventCount: Count,
  /** Uncompressed canonical JSONL bytes. */
  bytes: Count,
  /** Stored (gzip) bytes of `trajectory.jsonl.gz`. */
  storedBytes: Count,
  /** The last event's seq, -1 when empty. */
  lastSeq: z.int().min(-1),
  sealedAt: Timestamp,
  blocks: z.array(SealBlock),
  provenance: Provenance.optional(),
});
export type SealRecord = z.infer<typeof SealRecord>;

/** `meta.json`: written when an imported trajectory is created (runs' trajectories have none). */
export const TrajectoryMeta = z.strictObject({
  version: z.literal(1),
  trajectoryId: z.string().min(1),
  provenance: Provenance,
});
export type TrajectoryMeta = z.infer<typeof TrajectoryMeta>;

/** What retention deleted: returned to the caller (who persists it) and kept as the tombstone. */
export const DeletionRecord = z.strictObject({
  tenant: z.string().min(1),
  trajectoryId: z.string().min(1),
  digest: Digest,
  eventCount: Count,
  storedBytes: Count,
  sealedAt: Timestamp,
  deletedAt: Timestamp,
  reason: z.literal('retention'),
  retentionDays: z.int().positive(),
  provenance: Provenance.optional(),
});
export type DeletionRecord = z.infer<typeof DeletionRecord>;

/** An imported trajectory as listed by `{source, externalId}`. */
export const ImportedTrajectory = z.strictObject({
  trajectoryId: z.string().min(1),
  provenance: Provenance,
  digest: Digest,
  eventCount: Count,
  sealedAt: Timestamp,
});
export type ImportedTrajectory = z.infer<typeof ImportedTrajectory>;

export function encodeRecord(value: unknown): Uint8Array {
  return Buffer.from(JSON.stringify(value), 'utf8');
}
