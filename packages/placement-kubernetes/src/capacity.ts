// Slots from a namespace's ResourceQuotas: for every quota resource a sandbox pod consumes (pods, CPU,
// memory, ephemeral storage — requests or limits, which are equal on sandbox pods), how many more such pods
// fit; the smallest answer wins. Without a quota the driver's own cap on live sandboxes applies.
import { DEFAULT_LIMITS } from '@everdict/placement';
import type { V1ResourceQuota } from '@kubernetes/client-node';
import { parseResource } from './quantity.js';

export interface PodFootprint {
  memoryBytes: bigint;
  cpuMillis: bigint | undefined;
  /** The pod's ephemeral-storage request = limit (the driver's `diskBytes`). */
  diskBytes: bigint;
}

/** What one sandbox pod uses of a quota resource (0n: the resource does not constrain sandboxes). */
function perPod(resource: string, pod: PodFootprint): bigint {
  switch (resource) {
    case 'pods':
    case 'count/pods':
      return 1n;
    case 'memory':
    case 'requests.memory':
    case 'limits.memory':
      return pod.memoryBytes;
    case 'cpu':
    case 'requests.cpu':
    case 'limits.cpu':
      return pod.cpuMillis ?? 0n;
    case 'ephemeral-storage':
    case 'requests.ephemeral-storage':
    case 'limits.ephemeral-storage':
      return pod.diskBytes;
    default:
      return 0n;
  }
}

export interface Slots {
  total: number;
  free: number;
}

/** The slots the quotas leave for sandbox pods of this footprint, or undefined when no quota constrains them. */
export function slotsFromQuotas(quotas: V1ResourceQuota[], pod: PodFootprint): Slots | undefined {
  let total: bigint | undefined;
  let free: bigint | undefined;
  for (const quota of quotas) {
    const hard = quota.status?.hard ?? quota.spec?.hard ?? {};
    const used = quota.status?.used ?? {};
    for (const [resource, text] of Object.entries(hard)) {
      const each = perPod(resource, pod);
      if (each === 0n) continue;
      const limit = parseResource(resource, String(text)) ?? 0n;
      const inUse = parseResource(resource, String(used[resource] ?? '0')) ?? 0n;
      const t = limit / each;
      const f = limit > inUse ? (limit - inUse) / each : 0n;
      total = total === undefined || t < total ? t : total;
      free = free === undefined || f < free ? f : free;
    }
  }
  if (total === undefined || free === undefined) return undefined;
  return { total: Number(total), free: Number(free < total ? free : total) };
}

/**
 * A namespace's slots: its quotas measured in sandboxes of the default limits and the driver's disk
 * (`diskBytes`, which every sandbox pod requests) — the unit of a slot — or, when no quota constrains
 * sandbox pods, the driver's cap minus the sandboxes alive there.
 */
export function namespaceSlots(
  quotas: V1ResourceQuota[],
  livePods: number,
  maxSandboxes: number,
  diskBytes: bigint,
): Slots {
  const slots = slotsFromQuotas(quotas, {
    memoryBytes: BigInt(DEFAULT_LIMITS.memoryBytes),
    cpuMillis: undefined,
    diskBytes,
  });
  return slots ?? { total: maxSandboxes, free: Math.max(0, maxSandboxes - livePods) };
}
