// Energy the agent service can state about a turn, both estimated and labelled as such:
// - an active interval: wall-clock × EVERDICT_AGENT_WATTS (the agent process's share of a host; the remote
//   model's inference energy is not observable from here and is not included);
// - a transcript park: stored bytes × parked seconds × EVERDICT_STORAGE_W_PER_GB. Never zero: the figure is
//   rounded up to a whole microjoule, because a park that kept bytes for any time drew power for it.

/**
 * Default draw of stored bytes, W per GB: ≈ 1.2 W/TB — a replicated object store on disks (≈ 0.4 W/TB per
 * raw copy × 3 copies, plus the servers' share). An estimate; set EVERDICT_STORAGE_W_PER_GB for your store.
 */
export const DEFAULT_STORAGE_W_PER_GB = 0.0012;
/** Default draw of the agent process while an interval runs, W (the control plane's agent-bridge figure). */
export const DEFAULT_AGENT_WATTS = 2;

export const PARK_METER = 'storage-bytes-x-seconds-x-w-per-gb';
export const ACTIVE_METER = 'agent-wallclock-model';

export interface ParkEnergy {
  readonly idleUj: bigint;
  readonly provenance: 'estimated';
  readonly meter: typeof PARK_METER;
  readonly bytes: number;
  readonly parkedMs: number;
  readonly wattsPerGb: number;
}

export function parkEnergy(bytes: number, parkedMs: number, wattsPerGb: number): ParkEnergy {
  // J = W/GB × GB × s = wpg × (bytes / 1e9) × (ms / 1e3); µJ = J × 1e6  →  wpg × bytes × ms / 1e6.
  const uj = (wattsPerGb * Math.max(bytes, 1) * Math.max(parkedMs, 1)) / 1e6;
  const idleUj = BigInt(Math.max(1, Math.ceil(uj)));
  return { idleUj, provenance: 'estimated', meter: PARK_METER, bytes, parkedMs, wattsPerGb };
}

/** µJ of an active interval: W × ms = mJ; × 1000 → µJ; at least 1 (an interval that ran drew something). */
export function activeEnergyUj(startedMs: number, endedMs: number, watts: number): bigint {
  return BigInt(Math.max(1, Math.ceil(Math.max(0, endedMs - startedMs) * watts * 1000)));
}
