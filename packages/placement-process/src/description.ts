// What the process driver says of itself (`describe()`): every capability of the contract, and the limit
// mechanism its host gave it (cgroup v2, cgroup v1 or rlimits).
import { type DriverDescription, EVERY_CAPABILITY, placementOf } from '@everdict/placement';

export const PROCESS_DRIVER = 'process';

export function describeProcessDriver(mechanism: DriverDescription['mechanism']): DriverDescription {
  return {
    driver: PROCESS_DRIVER,
    placement: placementOf('process'),
    capabilities: { ...EVERY_CAPABILITY },
    mechanism,
  };
}
