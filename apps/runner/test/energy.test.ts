// The interval's energy: RAPL counters under a fixture powercap root → `measured` (wrap-around included);
// no readable counters → `estimated` from CPU time × the documented per-core wattage, naming the meter.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RAPL_RESCAN_MS } from '../src/energy.js';
import { DEFAULT_WATTS_PER_CORE, EnergyMeter, estimateUj } from '../src/index.js';

const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function powercap(zones: Record<string, { energy: bigint; max: bigint }>): string {
  const root = mkdtempSync(join(tmpdir(), 'powercap-'));
  dirs.push(root);
  for (const [name, z] of Object.entries(zones)) {
    mkdirSync(join(root, name));
    writeFileSync(join(root, name, 'energy_uj'), `${z.energy}\n`);
    writeFileSync(join(root, name, 'max_energy_range_uj'), `${z.max}\n`);
  }
  return root;
}
const setEnergy = (root: string, zone: string, v: bigint) =>
  writeFileSync(join(root, zone, 'energy_uj'), `${v}\n`);

describe('EnergyMeter', () => {
  it('measures the package zones between begin and end (RAPL → measured)', async () => {
    const root = powercap({
      'intel-rapl:0': { energy: 1_000_000n, max: 262_143_328_850n },
      'intel-rapl:1': { energy: 262_143_000_000n, max: 262_143_328_850n },
    });
    // A sub-zone is not a package: never counted twice.
    mkdirSync(join(root, 'intel-rapl:0:0'));
    writeFileSync(join(root, 'intel-rapl:0:0', 'energy_uj'), '5\n');
    const meter = new EnergyMeter(root);
    await meter.begin();
    setEnergy(root, 'intel-rapl:0', 3_500_000n);
    setEnergy(root, 'intel-rapl:1', 1_000n); // wrapped past its range
    writeFileSync(join(root, 'intel-rapl:0:0', 'energy_uj'), '999999999\n');
    const figure = await meter.end(1234, 5000);
    expect(figure).toEqual({
      activeUj: 2_500_000n + (262_143_328_850n - 262_143_000_000n) + 1_000n,
      provenance: 'measured',
      meter: 'rapl',
    });
  });

  it('estimates from CPU time × the per-core wattage where no counter is readable', async () => {
    const meter = new EnergyMeter(join(tmpdir(), 'no-such-powercap-root'));
    await meter.begin();
    const figure = await meter.end(1500, 9000);
    expect(figure).toEqual({
      activeUj: 1500n * BigInt(DEFAULT_WATTS_PER_CORE) * 1000n,
      provenance: 'estimated',
      meter: `cgroup-cpu-model:${DEFAULT_WATTS_PER_CORE}W-per-core`,
    });
    expect(estimateUj(1, 10)).toBe(10_000n);
    expect((await meter.end(null, 200)).meter).toBe(`wall-time-model:${DEFAULT_WATTS_PER_CORE}W-one-core`);
  });

  it('falls back to the estimate when a counter vanishes mid-interval', async () => {
    const root = powercap({ 'intel-rapl:0': { energy: 10n, max: 100n } });
    const meter = new EnergyMeter(root, 20);
    await meter.begin();
    rmSync(join(root, 'intel-rapl:0'), { recursive: true });
    expect(await meter.end(10, 10)).toMatchObject({ provenance: 'estimated', activeUj: 200_000n });
  });

  it('scans a powercap root once: later intervals re-read only the energy files of the zones found', async () => {
    const root = powercap({ 'intel-rapl:0': { energy: 100n, max: 1_000n } });
    const first = new EnergyMeter(root);
    await first.begin();
    setEnergy(root, 'intel-rapl:0', 150n);
    expect((await first.end(1, 1)).activeUj).toBe(50n);
    // A zone appearing afterwards is not one this process found; the range of the zones found is kept.
    mkdirSync(join(root, 'intel-rapl:1'));
    writeFileSync(join(root, 'intel-rapl:1', 'energy_uj'), '0\n');
    rmSync(join(root, 'intel-rapl:0', 'max_energy_range_uj'));
    const second = new EnergyMeter(root);
    await second.begin();
    setEnergy(root, 'intel-rapl:0', 20n); // wrapped past its range (1000)
    writeFileSync(join(root, 'intel-rapl:1', 'energy_uj'), '5000\n');
    expect(await second.end(1, 1)).toEqual({
      activeUj: 1_000n - 150n + 20n,
      provenance: 'measured',
      meter: 'rapl',
    });
  });

  it('scans a root where no zone was found again only after RAPL_RESCAN_MS', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    const root = powercap({});
    const measure = async () => {
      const meter = new EnergyMeter(root);
      await meter.begin();
      if (existsSync(join(root, 'intel-rapl:0'))) setEnergy(root, 'intel-rapl:0', 70n);
      return meter.end(1, 1);
    };
    expect((await measure()).provenance).toBe('estimated');
    mkdirSync(join(root, 'intel-rapl:0'));
    setEnergy(root, 'intel-rapl:0', 40n);
    vi.setSystemTime(1_000_000 + RAPL_RESCAN_MS - 1);
    expect((await measure()).provenance).toBe('estimated'); // not scanned again yet
    setEnergy(root, 'intel-rapl:0', 40n);
    vi.setSystemTime(1_000_000 + RAPL_RESCAN_MS);
    expect(await measure()).toEqual({ activeUj: 30n, provenance: 'measured', meter: 'rapl' });
  });
});
