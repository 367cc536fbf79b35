// What the Kubernetes driver says of itself (`describe()`): every capability of the contract — a terminal only
// where the cluster's runtime gives exec one (`pty`) — and the cluster or runner name as its placement target.
import { type DriverDescription, EVERY_CAPABILITY, placementOf } from '@everdict/placement';
import { DRIVER_NAME } from './pod-manifest.js';

export function describeKubernetesDriver(config: {
  readonly pty: boolean;
  readonly target?: string | undefined;
}): DriverDescription {
  return {
    driver: DRIVER_NAME,
    placement: placementOf('kubernetes', config.target),
    capabilities: { ...EVERY_CAPABILITY, pty: config.pty },
    mechanism: 'kubernetes',
  };
}
