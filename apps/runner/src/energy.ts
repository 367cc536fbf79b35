// The interval's energy. Where the host's RAPL counters are readable (`<powercap>/intel-rapl:N/energy_uj`,
// powercap root from EVERDICT_POWERCAP_ROOT, default /sys/class/powercap) the figure is `measured`: the
// package zones' energy between the interval's start and end (wrap-around at max_energy_range_uj handled).
// It is the whole package's energy over the interval — what the host drew while the interval ran, not a
// share apportioned to the sandbox. Elsewhere it is `estimated`: the sandbox's CPU time (its cgroup's
// counter, from the driver's usage) × WATTS_PER_CORE, and the meter says so.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The documented model: one fully busy core draws this many watts (EVERDICT_WATTS_PER_CORE overrides). */
export const DEFAULT_WATTS_PER_CORE = 10;

export interface EnergyFigure {
  readonly activeUj: bigint;
  readonly provenance: 'measured' | 'estimated';
  readonly meter: string;
}

interface Zone {
  readonly dir: string;
  readonly maxUj: bigint;
}

export interface RaplReading {
  readonly zones: readonly Zone[];
  readonly values: readonly bigint[];
}

async function readUj(path: string): Promise<bigint | undefined> {
  try {
    const text = (await readFile(path, 'utf8')).trim();
    return /^\d+$/.test(text) ? BigInt(text) : undefined;
  } catch {
    return undefined;
  }
}

/** The package zones (`intel-rapl:N`, not sub-zones) whose counters can be read, with their values now. */
export async function readRapl(root: string): Promise<RaplReading | undefined> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return undefined;
  }
  const zones: Zone[] = [];
  const values: bigint[] = [];
  for (const name of names.filter((n) => /^intel-rapl:\d+$/.test(n)).sort()) {
    const dir = join(root, name);
    const value = await readUj(join(dir, 'energy_uj'));
    if (value === undefined) continue;
    zones.push({ dir, maxUj: (await readUj(join(dir, 'max_energy_range_uj'))) ?? 0n });
    values.push(value);
  }
  return zones.length > 0 ? { zones, values } : undefined;
}

/** Energy between two readings of the same zones (a counter that wrapped counts through its range). */
export async function raplSince(start: RaplReading): Promise<bigint | undefined> {
  let total = 0n;
  for (let i = 0; i < start.zones.length; i++) {
    const zone = start.zones[i]!;
    const now = await readUj(join(zone.dir, 'energy_uj'));
    if (now === undefined) return undefined;
    const before = start.values[i]!;
    total += now >= before ? now - before : zone.maxUj - before + now;
  }
  return total;
}

/** CPU milliseconds × watts per core → microjoules (W·ms = mJ). */
export function estimateUj(cpuTimeMs: number, wattsPerCore: number): bigint {
  return BigInt(Math.round(cpuTimeMs * wattsPerCore * 1000));
}

export class EnergyMeter {
  #start: RaplReading | undefined;
  constructor(
    readonly powercapRoot: string,
    readonly wattsPerCore: number = DEFAULT_WATTS_PER_CORE,
  ) {}

  async begin(): Promise<void> {
    this.#start = await readRapl(this.powercapRoot);
  }

  /** `cpuTimeMs` is the sandbox's CPU time (null when the driver cannot measure it: then wall time, said so). */
  async end(cpuTimeMs: number | null, wallMs: number): Promise<EnergyFigure> {
    if (this.#start) {
      const uj = await raplSince(this.#start);
      if (uj !== undefined) return { activeUj: uj, provenance: 'measured', meter: 'rapl' };
    }
    if (cpuTimeMs !== null) {
      return {
        activeUj: estimateUj(cpuTimeMs, this.wattsPerCore),
        provenance: 'estimated',
        meter: `cgroup-cpu-model:${this.wattsPerCore}W-per-core`,
      };
    }
    return {
      activeUj: estimateUj(wallMs, this.wattsPerCore),
      provenance: 'estimated',
      meter: `wall-time-model:${this.wattsPerCore}W-one-core`,
    };
  }
}
