// What a driver reports about itself and its sandboxes: usage, capacity, capabilities, reaped orphans.
import { Placement } from '@everdict/run-model';
import { z } from 'zod';
import { DriverName, Labels } from './spec.js';

/**
 * How a driver enforces and measures limits: cgroups (v2 or the v1 controllers), per-process rlimits,
 * a Kubernetes ResourceQuota + container limits, or nothing (the inline driver).
 */
export const LimitMechanism = z.enum(['cgroup-v2', 'cgroup-v1', 'rlimit', 'kubernetes', 'none']);
export type LimitMechanism = z.infer<typeof LimitMechanism>;

/**
 * What a sandbox consumed, as measured. A figure the mechanism cannot observe is null, never estimated
 * (rlimits measure no peak memory; the inline driver measures neither CPU nor memory).
 */
export const SandboxUsage = z.strictObject({
  cpuTimeMs: z.number().nonnegative().nullable(),
  peakMemoryBytes: z.int().nonnegative().nullable(),
  /** From provision until now (or until dispose). */
  wallTimeMs: z.number().nonnegative(),
  mechanism: LimitMechanism,
});
export type SandboxUsage = z.infer<typeof SandboxUsage>;

export const Capacity = z.strictObject({
  slotsTotal: z.int().nonnegative(),
  slotsFree: z.int().nonnegative(),
  mechanism: LimitMechanism,
});
export type Capacity = z.infer<typeof Capacity>;

/** Optional operations; a lacking one throws `unsupported`. provision/dispose/capacity/describe are not optional. */
export const Capabilities = z.strictObject({
  exec: z.boolean(),
  stream: z.boolean(),
  /** stream({tty: true}) gives a real pseudo-terminal (resize applies). */
  pty: z.boolean(),
  logs: z.boolean(),
  snapshot: z.boolean(),
  restore: z.boolean(),
  usage: z.boolean(),
  reap: z.boolean(),
  /** A `network: "granted"` spec is honoured; without it such a spec is `unsupported`. */
  network: z.boolean(),
  /** Images other than `default` can be provisioned. */
  images: z.boolean(),
});
export type Capabilities = z.infer<typeof Capabilities>;

/** Every capability of the contract: what a driver with a filesystem, isolation and images claims (less its gaps). */
export const EVERY_CAPABILITY: Capabilities = {
  exec: true,
  stream: true,
  pty: true,
  logs: true,
  snapshot: true,
  restore: true,
  usage: true,
  reap: true,
  network: true,
  images: true,
};

export const DriverDescription = z.strictObject({
  driver: DriverName,
  /** The run-model placement this driver serves (see placementOf). */
  placement: Placement,
  capabilities: Capabilities,
  mechanism: LimitMechanism,
});
export type DriverDescription = z.infer<typeof DriverDescription>;

/** One sandbox `reap` disposed, and what it removed (driver-specific words: "workspace", "cgroup:memory", "pod"). */
export const ReapedSandbox = z.strictObject({
  id: z.string(),
  labels: Labels,
  removed: z.array(z.string()),
});
export type ReapedSandbox = z.infer<typeof ReapedSandbox>;
