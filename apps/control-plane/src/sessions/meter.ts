// Idle metering: a held-open session's cost is bounded only by the clock. Energy is an estimate (no meter
// sees an idle sandbox) and is labelled so in the record; money is the tenant's `sessionUsdPerHour`.

/** Estimated draw of an open session's retained sandbox (workspace, cgroups, page cache), in watts. */
export const OPEN_SESSION_WATTS = 2;
/** The meter label the record carries for a session's intervals. */
export const SESSION_METER = 'session-held-open-estimate';
/** Estimated draw of a parked image (the snapshot kept in storage): per GiB kept, in watts; a floor of 1 µJ/ms. */
export const PARK_WATTS_PER_GIB = 0.05;

/** µJ an open interval of `ms` draws (estimated). */
export function openEnergyUj(ms: number): number {
  return Math.max(1, Math.round(Math.max(0, ms) * OPEN_SESSION_WATTS * 1000));
}

/** µJ a park of `bytes` held for `ms` draws (estimated, never zero). */
export function parkEnergyUj(ms: number, bytes: number): bigint {
  const watts = (Math.max(0, bytes) / 2 ** 30) * PARK_WATTS_PER_GIB;
  return BigInt(Math.max(1, Math.round(Math.max(1, ms) * Math.max(watts, 0.001) * 1000)));
}

/** USD a session held `ms` (open or parked) costs at `usdPerHour`. */
export function sessionUsd(ms: number, usdPerHour: number): number {
  return (Math.max(0, ms) / 3_600_000) * usdPerHour;
}
