import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { activeEnergyUj, DEFAULT_STORAGE_W_PER_GB, parkEnergy } from './energy.js';

describe('park energy = stored bytes × parked seconds × W/GB', () => {
  it('computes the documented formula, rounded up to whole µJ', () => {
    // 1 GB for 1 h at 1.2 W/TB (0.0012 W/GB) = 4.32 J.
    expect(parkEnergy(1e9, 3_600_000, DEFAULT_STORAGE_W_PER_GB).idleUj).toBe(4_320_000n);
    // 10 kB for a week at 0.0012 W/GB = 7.2576 mJ → 7258 µJ.
    expect(parkEnergy(10_000, 7 * 86_400_000, 0.0012).idleUj).toBe(7258n);
  });

  it('is never zero, always estimated and labelled with its meter', () => {
    fc.assert(
      fc.property(fc.nat(1e7), fc.nat(1e9), fc.double({ min: 1e-9, max: 10, noNaN: true }), (b, ms, w) => {
        const e = parkEnergy(b, ms, w);
        return e.idleUj >= 1n && e.provenance === 'estimated' && e.meter.length > 0;
      }),
    );
  });

  it('active energy is wall-clock × watts, at least 1 µJ', () => {
    expect(activeEnergyUj(0, 1500, 2)).toBe(3_000_000n);
    expect(activeEnergyUj(10, 10, 2)).toBe(1n);
  });
});
