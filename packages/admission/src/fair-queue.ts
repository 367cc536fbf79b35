// The WFQ kernel. Per tenant and class, a FIFO; each item gets a virtual finish tag
// F = max(V_class, tenant's last F in that class) + 1 / weight. Dispatch order:
//   1. aged first: a tenant whose oldest queued item has waited >= agingMs is promoted; promoted tenants
//      are served ahead of every class, oldest item first within the tenant, and by weight across
//      tenants (their own WFQ clock), so a flood that ages cannot buy more than its weighted share;
//   2. then interactive, background, batch — strictly; within a class, the least head finish tag.
// Tenants, not items, sit in indexed heaps keyed by their heads: O(log tenants) per operation (amortized;
// promotion and demotion each happen once per head). A blocked tenant (at its concurrency quota) leaves
// every heap until unblocked: it is skipped, it never blocks anyone else.
import type { RunClass } from '@everdict/run-model';
import { Fifo } from './fifo.js';
import { IndexedHeap } from './heap.js';

export interface QueueItem {
  readonly id: string;
  readonly tenant: string;
  readonly class: RunClass;
  readonly enqueuedAt: number;
}

const LANE: Readonly<Record<RunClass, number>> = { interactive: 0, background: 1, batch: 2 };

interface Node {
  readonly item: QueueItem;
  readonly finish: number;
  readonly seq: number;
  removed: boolean;
}

interface TenantQueue {
  weight: number;
  blocked: boolean;
  readonly nodes: Map<string, Node>;
  /** Finish tag of the tenant's last aged service, on the aged clock. */
  agedFinish: number;
  readonly lanes: Fifo<Node>[];
  readonly lastFinish: number[];
}

const older = (a: Node, b: Node | undefined): boolean =>
  !b || a.item.enqueuedAt < b.item.enqueuedAt || (a.item.enqueuedAt === b.item.enqueuedAt && a.seq < b.seq);

export class FairQueue {
  private readonly tenants = new Map<string, TenantQueue>();
  private count = 0;
  private readonly byClass = [0, 1, 2].map(() => new IndexedHeap<string>());
  /** Not-promoted tenants by their oldest head; promotion pops from the top as time passes. */
  private readonly waiting = new IndexedHeap<string>();
  private readonly aged = new IndexedHeap<string>();
  private readonly clock = [0, 0, 0];
  private agedClock = 0;
  private seq = 0;

  constructor(private readonly agingMs: number) {}

  get size(): number {
    return this.count;
  }

  tenantSize(tenant: string): number {
    return this.tenants.get(tenant)?.nodes.size ?? 0;
  }

  setWeight(tenant: string, weight: number): void {
    this.tenant(tenant).weight = weight;
  }

  /** A tenant at its concurrency quota is blocked: skipped by `next` until unblocked. */
  setBlocked(tenant: string, blocked: boolean): void {
    const t = this.tenants.get(tenant);
    if (!t || t.blocked === blocked) return;
    t.blocked = blocked;
    this.refresh(tenant, t);
  }

  enqueue(item: QueueItem): void {
    const t = this.tenant(item.tenant);
    if (t.nodes.has(item.id)) throw new RangeError(`already queued: ${item.id}`);
    const lane = LANE[item.class];
    const finish = Math.max(this.clock[lane]!, t.lastFinish[lane]!) + 1 / t.weight;
    t.lastFinish[lane] = finish;
    const node: Node = { item, finish, seq: this.seq++, removed: false };
    t.lanes[lane]!.push(node);
    t.nodes.set(item.id, node);
    this.count++;
    if (t.lanes[lane]!.peek() === node) this.refresh(item.tenant, t, lane);
  }

  /** Take a queued item out (cancelled before dispatch). */
  remove(tenant: string, id: string): boolean {
    const t = this.tenants.get(tenant);
    const node = t?.nodes.get(id);
    if (!t || !node) return false;
    node.removed = true;
    t.nodes.delete(id);
    this.count--;
    this.refresh(tenant, t, LANE[node.item.class]);
    return true;
  }

  /** Pop the next item to dispatch at `now`, or undefined if every non-blocked tenant is empty. */
  next(now: number): QueueItem | undefined {
    for (let top = this.waiting.peek(); top !== undefined; top = this.waiting.peek()) {
      const t = this.tenant(top);
      if (now - this.oldest(t)!.item.enqueuedAt < this.agingMs) break;
      this.waiting.delete(top);
      t.agedFinish = Math.max(t.agedFinish, this.agedClock);
      this.aged.set(top, t.agedFinish + 1 / t.weight, this.oldest(t)!.seq);
    }
    for (let top = this.aged.peek(); top !== undefined; top = this.aged.peek()) {
      const t = this.tenant(top);
      const head = this.oldest(t);
      if (head && now - head.item.enqueuedAt >= this.agingMs) {
        t.agedFinish += 1 / t.weight; // its key: the start was fixed at promotion
        this.agedClock = Math.max(this.agedClock, t.agedFinish);
        return this.serve(top, t, head);
      }
      this.aged.delete(top); // its aged item left (removed): back to waiting
      this.refresh(top, t);
    }
    for (let lane = 0; lane < 3; lane++) {
      const top = this.byClass[lane]!.peek();
      if (top !== undefined) return this.serve(top, this.tenant(top), this.tenant(top).lanes[lane]!.peek()!);
    }
    return undefined;
  }

  private serve(tenant: string, t: TenantQueue, node: Node): QueueItem {
    const lane = LANE[node.item.class];
    t.lanes[lane]!.shift();
    t.nodes.delete(node.item.id);
    this.count--;
    this.clock[lane] = Math.max(this.clock[lane]!, node.finish);
    this.refresh(tenant, t, lane);
    return node.item;
  }

  private oldest(t: TenantQueue): Node | undefined {
    let best: Node | undefined;
    for (const fifo of t.lanes) {
      const head = fifo.peek();
      if (head && older(head, best)) best = head;
    }
    return best;
  }

  /** Re-key the tenant from its current heads: in one class heap if only that lane changed, else all. */
  private refresh(tenant: string, t: TenantQueue, only?: number): void {
    for (let lane = only ?? 0; lane <= (only ?? 2); lane++) {
      const head = t.blocked ? undefined : t.lanes[lane]!.peek();
      if (head) this.byClass[lane]!.set(tenant, head.finish, head.seq);
      else this.byClass[lane]!.delete(tenant);
    }
    const oldest = t.blocked ? undefined : this.oldest(t);
    if (!oldest) {
      this.waiting.delete(tenant);
      this.aged.delete(tenant);
    } else if (this.aged.has(tenant)) {
      this.aged.set(tenant, t.agedFinish + 1 / t.weight, oldest.seq);
    } else {
      this.waiting.set(tenant, oldest.item.enqueuedAt, oldest.seq);
    }
  }

  private tenant(id: string): TenantQueue {
    let t = this.tenants.get(id);
    if (!t) {
      const lanes = [new Fifo<Node>(), new Fifo<Node>(), new Fifo<Node>()];
      t = { weight: 1, blocked: false, nodes: new Map(), agedFinish: 0, lanes, lastFinish: [0, 0, 0] };
      this.tenants.set(id, t);
    }
    return t;
  }
}
