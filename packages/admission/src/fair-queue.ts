// The fair queue by id: tenants and items named by strings, over the handle-based WFQ kernel in wfq.ts
// (dispatch order, aging and blocking are documented there). The memory store drives the kernel
// directly with its own run records; this is the API for everything else.
import type { RunClass } from '@everdict/run-model';
import { Wfq, type WfqNode, type WfqTenant } from './wfq.js';

export interface QueueItem {
  readonly id: string;
  readonly tenant: string;
  readonly class: RunClass;
  readonly enqueuedAt: number;
}

export const LANE: Readonly<Record<RunClass, number>> = { interactive: 0, background: 1, batch: 2 };

class ItemNode implements WfqNode {
  readonly enqueuedAt: number;
  readonly lane: number;
  finish = 0;
  seq = 0;
  removed = false;

  constructor(readonly item: QueueItem) {
    this.enqueuedAt = item.enqueuedAt;
    this.lane = LANE[item.class];
  }
}

interface TenantEntry {
  readonly handle: WfqTenant<ItemNode>;
  readonly nodes: Map<string, ItemNode>;
}

export class FairQueue {
  private readonly wfq: Wfq<ItemNode>;
  private readonly tenants = new Map<string, TenantEntry>();

  constructor(agingMs: number) {
    this.wfq = new Wfq<ItemNode>(agingMs);
  }

  get size(): number {
    return this.wfq.size;
  }

  tenantSize(tenant: string): number {
    return this.tenants.get(tenant)?.nodes.size ?? 0;
  }

  setWeight(tenant: string, weight: number): void {
    this.wfq.setWeight(this.tenant(tenant).handle, weight);
  }

  /** A tenant at its concurrency quota is blocked: skipped by `next` until unblocked. */
  setBlocked(tenant: string, blocked: boolean): void {
    const t = this.tenants.get(tenant);
    if (t) this.wfq.setBlocked(t.handle, blocked);
  }

  enqueue(item: QueueItem): void {
    const t = this.tenant(item.tenant);
    if (t.nodes.has(item.id)) throw new RangeError(`already queued: ${item.id}`);
    const node = new ItemNode(item);
    t.nodes.set(item.id, node);
    this.wfq.enqueue(t.handle, node);
  }

  /** Take a queued item out (cancelled before dispatch). */
  remove(tenant: string, id: string): boolean {
    const t = this.tenants.get(tenant);
    const node = t?.nodes.get(id);
    if (!t || !node) return false;
    t.nodes.delete(id);
    this.wfq.remove(t.handle, node);
    return true;
  }

  /** Pop the next item to dispatch at `now`, or undefined if every non-blocked tenant is empty. */
  next(now: number): QueueItem | undefined {
    const node = this.wfq.next(now);
    if (!node) return undefined;
    this.tenants.get(node.item.tenant)?.nodes.delete(node.item.id);
    return node.item;
  }

  private tenant(id: string): TenantEntry {
    let t = this.tenants.get(id);
    if (!t) {
      t = { handle: this.wfq.tenant(), nodes: new Map() };
      this.tenants.set(id, t);
    }
    return t;
  }
}
