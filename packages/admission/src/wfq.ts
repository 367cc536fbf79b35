// The WFQ kernel. Per tenant and class, a FIFO; each node gets a virtual finish tag
// F = max(V_class, tenant's last F in that class) + 1 / weight. Dispatch order:
//   1. aged first: a tenant whose oldest queued node has waited >= agingMs is promoted; promoted tenants
//      are served ahead of every class, oldest node first within the tenant, and by weight across
//      tenants (their own WFQ clock), so a flood that ages cannot buy more than its weighted share;
//   2. then interactive, background, batch — strictly; within a class, the least head finish tag.
// Tenants, not nodes, sit in heaps keyed by their heads: O(log tenants) per operation (amortized;
// promotion and demotion each happen once per head). A blocked tenant (at its concurrency quota) leaves
// every heap until unblocked: it is skipped, it never blocks anyone else.
// This core works on handles — the caller holds its tenants' `WfqTenant`s, and its nodes are numbers in a
// `WfqNodes` table of typed arrays — so nothing on the hot path is looked up by id or allocated per node;
// `FairQueue` is the id-keyed API over it.
import { Fifo } from './fifo.js';
import { IdHeap } from './id-heap.js';
import type { WfqNodes } from './wfq-nodes.js';

export class WfqTenant {
  weight = 1;
  blocked = false;
  /** Live nodes queued. */
  count = 0;
  /** Finish tag of the tenant's last aged service, on the aged clock. */
  agedFinish = 0;
  readonly lanes: readonly [Fifo, Fifo, Fifo];
  readonly lastFinish = [0, 0, 0];

  /** Its number in the queue's heaps. */
  constructor(
    readonly id: number,
    nodes: WfqNodes,
  ) {
    this.lanes = [new Fifo(nodes), new Fifo(nodes), new Fifo(nodes)];
  }
}

export class Wfq {
  private count = 0;
  private readonly members: WfqTenant[] = [];
  private readonly byClass = [new IdHeap(), new IdHeap(), new IdHeap()];
  /** Not-promoted tenants by their oldest head; promotion pops from the top as time passes. */
  private readonly waiting = new IdHeap();
  private readonly aged = new IdHeap();
  private readonly clock = [0, 0, 0];
  private agedClock = 0;
  private seq = 0;

  constructor(
    readonly agingMs: number,
    readonly nodes: WfqNodes,
  ) {}

  get size(): number {
    return this.count;
  }

  /** A new tenant handle (weight 1, unblocked, empty). */
  tenant(): WfqTenant {
    const t = new WfqTenant(this.members.length, this.nodes);
    this.members.push(t);
    return t;
  }

  setWeight(t: WfqTenant, weight: number): void {
    t.weight = weight;
  }

  /** A tenant at its concurrency quota is blocked: skipped by `next` until unblocked. */
  setBlocked(t: WfqTenant, blocked: boolean): void {
    if (t.blocked === blocked) return;
    t.blocked = blocked;
    this.refresh(t, -1);
  }

  /** Queue node `n` (its enqueuedAt and lane set by the caller). */
  enqueue(t: WfqTenant, n: number): void {
    const nodes = this.nodes;
    const lane = nodes.lane[n]!;
    const fifo = t.lanes[lane as 0 | 1 | 2];
    const finish = Math.max(this.clock[lane]!, t.lastFinish[lane]!) + 1 / t.weight;
    t.lastFinish[lane] = finish;
    nodes.finish[n] = finish;
    nodes.seq[n] = this.seq++;
    nodes.removed[n] = 0;
    fifo.push(n);
    t.count++;
    this.count++;
    if (fifo.peek() === n) this.refresh(t, lane);
  }

  /** Take a queued node out (cancelled before dispatch). It must be queued in `t`. */
  remove(t: WfqTenant, n: number): void {
    const lane = this.nodes.lane[n]!;
    this.nodes.removed[n] = 1;
    t.count--;
    this.count--;
    t.lanes[lane as 0 | 1 | 2].noteRemoved();
    this.refresh(t, lane);
  }

  /** Pop the next node to dispatch at `now`, or -1 if every non-blocked tenant is empty. */
  next(now: number): number {
    const enqueuedAt = this.nodes.enqueuedAt;
    // The waiting heap's key is each tenant's oldest enqueuedAt: the aging test reads no tenant.
    for (let id = this.waiting.peek(); id >= 0; id = this.waiting.peek()) {
      if (now - this.waiting.peekA() < this.agingMs) break;
      const top = this.members[id]!;
      const head = this.oldest(top);
      this.waiting.delete(id);
      top.agedFinish = Math.max(top.agedFinish, this.agedClock);
      this.aged.set(id, top.agedFinish + 1 / top.weight, this.nodes.seq[head]!);
    }
    for (let id = this.aged.peek(); id >= 0; id = this.aged.peek()) {
      const top = this.members[id]!;
      const head = this.oldest(top);
      if (head >= 0 && now - enqueuedAt[head]! >= this.agingMs) {
        top.agedFinish += 1 / top.weight; // its key: the start was fixed at promotion
        this.agedClock = Math.max(this.agedClock, top.agedFinish);
        return this.serve(top, head);
      }
      this.aged.delete(id); // its aged node left (removed): back to waiting
      this.refresh(top, -1);
    }
    for (let lane = 0; lane < 3; lane++) {
      const id = this.byClass[lane]!.peek();
      if (id >= 0) {
        const top = this.members[id]!;
        return this.serve(top, top.lanes[lane as 0 | 1 | 2].peek());
      }
    }
    return -1;
  }

  /** The tenant's oldest live head across its lanes (enqueuedAt, then seq), or -1. */
  private oldest(t: WfqTenant): number {
    const { enqueuedAt, seq } = this.nodes;
    let best = -1;
    for (const fifo of t.lanes) {
      const head = fifo.peek();
      if (
        head >= 0 &&
        (best < 0 ||
          enqueuedAt[head]! < enqueuedAt[best]! ||
          (enqueuedAt[head] === enqueuedAt[best] && seq[head]! < seq[best]!))
      )
        best = head;
    }
    return best;
  }

  private serve(t: WfqTenant, n: number): number {
    const lane = this.nodes.lane[n]!;
    t.lanes[lane as 0 | 1 | 2].shift();
    t.count--;
    this.count--;
    const finish = this.nodes.finish[n]!;
    if (finish > this.clock[lane]!) this.clock[lane] = finish;
    this.refresh(t, lane);
    return n;
  }

  /** Re-key the tenant from its current heads: in one class heap if only that lane changed (-1: all). */
  private refresh(t: WfqTenant, only: number): void {
    const { enqueuedAt, finish, seq } = this.nodes;
    const from = Math.max(only, 0);
    const to = only < 0 ? 2 : only;
    for (let lane = from; lane <= to; lane++) {
      const head = t.blocked ? -1 : t.lanes[lane as 0 | 1 | 2].peek();
      if (head >= 0) this.byClass[lane]!.set(t.id, finish[head]!, seq[head]!);
      else this.byClass[lane]!.delete(t.id);
    }
    const first = t.blocked || t.count === 0 ? -1 : this.oldest(t);
    if (first < 0) {
      this.waiting.delete(t.id);
      this.aged.delete(t.id);
    } else if (this.aged.has(t.id)) {
      this.aged.set(t.id, t.agedFinish + 1 / t.weight, seq[first]!);
    } else {
      this.waiting.set(t.id, enqueuedAt[first]!, seq[first]!);
    }
  }
}
