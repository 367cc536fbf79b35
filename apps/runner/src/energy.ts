// The interval's energy. Where the host's RAPL counters are readable (`<powercap>/intel-rapl:N/energy_uj`,
// powercap root from EVERDICT_POWERCAP_ROOT, default /sys/class/powercap) the figure is `measured`: the
// package zones' energy between the interval's start and end (wrap-around at max_energy_range_uj handled).
// It is the whole package's energy over the interval — what the host drew while the interval ran, not a
// share apportioned to the sandbox. Elsewhere it is `estimated`: the sandbox's CPU time (its cgroup's
// counter, from the driver's usage) × WATTS_PER_CORE, and the meter says so.
import { readdirSync, readFileSync } from 'node:fs';
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

/** A counter file's value, or undefined when it cannot be read or is not a number. Read synchronously: a
 * sysfs counter answers at once, where an asynchronous read costs four thread-pool trips. */
function readUj(path: string): bigint | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return /^\d+$/.test(text) ? BigInt(text) : undefined;
  } catch {
    return undefined;
  }
}

/** How long a powercap root where no package zone was found is left before it is scanned again. */
export const RAPL_RESCAN_MS = 60_000;

/** The package zones found under each powercap root: scanned once per process (the zones of a host do
 * not change while it runs), or again after RAPL_RESCAN_MS when none was found (a counter made readable
 * later is picked up without a restart). */
const discovered = new Map<string, { readonly zones: readonly Zone[]; readonly atMs: number }>();

/** The package zones (`intel-rapl:N`, not sub-zones) under `root` whose counters can be read now. */
function scanZones(root: string): Zone[] {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const zones: Zone[] = [];
  for (const name of names.filter((n) => /^intel-rapl:\d+$/.test(n)).sort()) {
    const dir = join(root, name);
    if (readUj(join(dir, 'energy_uj')) === undefined) continue;
    zones.push({ dir, maxUj: readUj(join(dir, 'max_energy_range_uj')) ?? 0n });
  }
  return zones;
}

function zonesOf(root: string, nowMs: number): readonly Zone[] {
  const known = discovered.get(root);
  if (known && (known.zones.length > 0 || nowMs - known.atMs < RAPL_RESCAN_MS)) return known.zones;
  const zones = scanZones(root);
  discovered.set(root, { zones, atMs: nowMs });
  return zones;
}

/**
 * The package zones whose counters can be read, with their values now. The zone list is the one found
 * when `root` was first scanned (zonesOf); each reading re-reads only the `energy_uj` files, and a zone
 * whose counter cannot be read now is left out of this reading, as a fresh scan would.
 */
export async function readRapl(root: string): Promise<RaplReading | undefined> {
  const zones: Zone[] = [];
  const values: bigint[] = [];
  for (const zone of zonesOf(root, Date.now())) {
    const value = readUj(join(zone.dir, 'energy_uj'));
    if (value === undefined) continue;
    zones.push(zone);
    values.push(value);
  }
  return zones.length > 0 ? { zones, values } : undefined;
}

/** Energy between two readings of the same zones (a counter that wrapped counts through its range). */
export async function raplSince(start: RaplReading): Promise<bigint | undefined> {
  let total = 0n;
  for (let i = 0; i < start.zones.length; i++) {
    const zone = start.zones[i]!;
    const now = readUj(join(zone.dir, 'energy_uj'));
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
