// The sandbox slots the driver reads from the cluster: a namespace's ResourceQuotas (listed on every call,
// never cached; pods, CPU, memory and ephemeral storage count) and its live sandbox pods (from the
// namespace's pod watch), turned into slots by the quota arithmetic of capacity.ts. provision checks the
// namespace its pod goes to; capacity() sums the slots of the configured capacityNamespaces.
import type { Capacity } from '@everdict/placement';
import type { CoreV1Api } from '@kubernetes/client-node';
import { apiFailure } from './api-clients.js';
import { namespaceSlots, type Slots } from './capacity.js';
import { podState } from './pod-manifest.js';
import type { PodWatch } from './pod-watch.js';

export class NamespaceCapacity {
  constructor(
    private readonly core: CoreV1Api,
    /** The namespace's pod watch, synced (the driver's, started on first use). */
    private readonly podsIn: (namespace: string) => Promise<PodWatch>,
    /** The cap on live sandboxes when no ResourceQuota constrains sandbox pods. */
    private readonly maxSandboxes: number,
    /** Each sandbox pod's ephemeral-storage request = limit, in bytes (what an ephemeral-storage quota counts). */
    private readonly diskBytes: number,
  ) {}

  /** One namespace's sandbox slots: its ResourceQuotas, or the driver's cap less its live sandbox pods. */
  async slotsIn(namespace: string): Promise<Slots> {
    const quotas = await this.core.listNamespacedResourceQuota({ namespace }).catch((error: unknown) => {
      throw apiFailure(`cannot read the resource quotas of ${namespace}`, error, { namespace });
    });
    const live = (await this.podsIn(namespace))
      .all()
      .filter((p) => !['gone', 'failed'].includes(podState(p))).length;
    return namespaceSlots(quotas.items, live, this.maxSandboxes, BigInt(this.diskBytes));
  }

  /** The slots of these namespaces summed, one namespace after another. */
  async of(namespaces: readonly string[]): Promise<Capacity> {
    let total = 0;
    let free = 0;
    for (const namespace of namespaces) {
      const slots = await this.slotsIn(namespace);
      total += slots.total;
      free += slots.free;
    }
    return { slotsTotal: total, slotsFree: free, mechanism: 'kubernetes' };
  }
}
