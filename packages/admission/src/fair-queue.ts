// The fair queue by id: tenants and items named by strings, over the handle-based WFQ kernel in wfq.ts
// (dispatch order, aging and blocking are documented there). The memory store drives the kernel
// directly with its own run records; this is the API for everything else.
import type { RunClass } from '@everdict/run-model';
import { Wfq, type WfqTenant } from './wfq.js';
import { WfqNodes } from './wfq-nodes.js';

export interface QueueItem {
  readonly id: string;
  readonly tenant: string;
  readonly class: RunClass;
  readonly enqueuedAt: number;
}

export const LANE: Readonly<Record<RunClass, number>> = { interactive: 0, background: 1, batch: 2 };

interface TenantEntry {
  readonly handle: WfqTenant;
  /** item id → its node number. */
  readonly nodes: Map<string, number>;
}

export class FairQueue {
  private readonly wfq: Wfq;
  private readonly nodes = new WfqNodes();
  /** Each node number's item (undefined once served). */
  private readonly items: (QueueItem | undefined)[] = [];
  private readonly tenants = new Map<string, TenantEntry>();

  constructor(agingMs: number) {
    this.wfq = new Wfq(agingMs, this.nodes);
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
    if (!Number.isFinite(item.enqueuedAt))
      throw new RangeError(`enqueuedAt must be finite, got ${item.enqueuedAt}`);
    const t = this.tenant(item.tenant);
    if (t.nodes.has(item.id)) throw new RangeError(`already queued: ${item.id}`);
    const n = this.nodes.alloc();
    this.nodes.enqueuedAt[n] = item.enqueuedAt;
    this.nodes.lane[n] = LANE[item.class];
    this.items[n] = item;
    t.nodes.set(item.id, n);
    this.wfq.enqueue(t.handle, n);
  }

  /** Take a queued item out (cancelled before dispatch). */
  remove(tenant: string, id: string): boolean {
    const t = this.tenants.get(tenant);
    const n = t?.nodes.get(id);
    if (!t || n === undefined) return false;
    t.nodes.delete(id);
    this.items[n] = undefined; // its number stays taken: the node is still in its FIFO until skipped
    this.wfq.remove(t.handle, n);
    return true;
  }

  /** Pop the next item to dispatch at `now`, or undefined if every non-blocked tenant is empty. */
  next(now: number): QueueItem | undefined {
    if (!Number.isFinite(now)) throw new RangeError(`now must be finite, got ${now}`);
    const n = this.wfq.next(now);
    if (n < 0) return undefined;
    const item = this.items[n]!;
    this.items[n] = undefined;
    this.nodes.release(n); // served: out of its FIFO, so the number can be reused
    this.tenants.get(item.tenant)?.nodes.delete(item.id);
    return item;
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
