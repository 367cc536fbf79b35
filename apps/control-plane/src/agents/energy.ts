// The idle energy of a transcript park: what storing the transcript's bytes draws while the turn waits.
// Estimated (nothing here is metered), labelled, never zero: stored bytes × parked seconds × W per GB.
import { z } from 'zod';

/** EVERDICT_STORAGE_W_PER_GB default: a replicated object store, ≈ 0.4 W per raw TB × 3 copies + servers. */
export const DEFAULT_STORAGE_W_PER_GB = 0.0012;
export const PARK_METER = 'storage-bytes-x-seconds-x-w-per-gb';

export interface ParkEnergy {
  readonly idleUj: bigint;
  readonly bytes: number;
  readonly parkedMs: number;
  readonly wattsPerGb: number;
  readonly provenance: 'estimated';
  readonly meter: typeof PARK_METER;
}

/** µJ = bytes/1e9 GB × W/GB × parkedMs/1e3 s × 1e6, rounded up, at least 1. */
export function parkEnergy(bytes: number, parkedMs: number, wattsPerGb: number): ParkEnergy {
  const ms = Math.max(0, parkedMs);
  const uj = Math.ceil((Math.max(0, bytes) * wattsPerGb * ms) / 1e6);
  return {
    idleUj: BigInt(Math.max(1, Number.isFinite(uj) ? uj : 1)),
    bytes,
    parkedMs: ms,
    wattsPerGb,
    provenance: 'estimated',
    meter: PARK_METER,
  };
}

/** EVERDICT_STORAGE_W_PER_GB from the environment (positive, finite), else the default. */
export function storageWattsPerGb(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.EVERDICT_STORAGE_W_PER_GB;
  if (raw === undefined || raw === '') return DEFAULT_STORAGE_W_PER_GB;
  return z.coerce.number().positive().finite().parse(raw);
}
