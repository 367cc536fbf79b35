// The WFQ kernel. Per tenant and class, a FIFO; each node gets a virtual finish tag
// F = max(V_class, tenant's last F in that class) + 1 / weight. Dispatch order:
//   1. aged first: a tenant whose oldest queued node has waited >= agingMs is promoted; promoted tenants
//      are served ahead of every class, oldest node first within the tenant, and by weight across
//      tenants (their own WFQ clock), so a flood that ages cannot buy more than its weighted share;
//   2. then interactive, background, batch — strictly; within a class, the least head finish tag.
// Tenants, not nodes, sit in heaps keyed by their heads: O(log tenants) per operation (amortized;
// promotion and demotion each happen once per head). A blocked tenant (at its concurrency quota) leaves
// every heap until unblocked: it is skipped, it never blocks anyone else.
// This core works on handles — the caller holds its tenants' `WfqTenant`s and its nodes — so nothing on
// the hot path is looked up by id; `FairQueue` is the id-keyed API over it.
import { Fifo } from './fifo.js';
import { IdHeap } from './id-heap.js';

/** A queued entry. The queue sets finish, seq and removed; the caller sets enqueuedAt and lane. */
export interface WfqNode {
  readonly enqueuedAt: number;
  /** 0 interactive, 1 background, 2 batch. */
  readonly lane: number;
  finish: number;
  seq: number;
  removed: boolean;
}

export class WfqTenant<N extends WfqNode> {
  weight = 1;
  blocked = false;
  /** Live nodes queued. */
  count = 0;
  /** Finish tag of the tenant's last aged service, on the aged clock. */
  agedFinish = 0;
  readonly lanes: readonly [Fifo<N>, Fifo<N>, Fifo<N>] = [new Fifo<N>(), new Fifo<N>(), new Fifo<N>()];
  readonly lastFinish = [0, 0, 0];

  /** Its number in the queue's heaps. */
  constructor(readonly id: number) {}
}

function oldest<N extends WfqNode>(t: WfqTenant<N>): N | undefined {
  let best: N | undefined;
  for (const fifo of t.lanes) {
    const head = fifo.peek();
    if (
      head &&
      (!best ||
        head.enqueuedAt < best.enqueuedAt ||
        (head.enqueuedAt === best.enqueuedAt && head.seq < best.seq))
    )
      best = head;
  }
  return best;
}

export class Wfq<N extends WfqNode> {
  private count = 0;
  private readonly members: WfqTenant<N>[] = [];
  private readonly byClass = [new IdHeap(), new IdHeap(), new IdHeap()];
  /** Not-promoted tenants by their oldest head; promotion pops from the top as time passes. */
  private readonly waiting = new IdHeap();
  private readonly aged = new IdHeap();
  private readonly clock = [0, 0, 0];
  private agedClock = 0;
  private seq = 0;

  constructor(readonly agingMs: number) {}

  get size(): number {
    return this.count;
  }

  /** A new tenant handle (weight 1, unblocked, empty). */
  tenant(): WfqTenant<N> {
    const t = new WfqTenant<N>(this.members.length);
    this.members.push(t);
    return t;
  }

  setWeight(t: WfqTenant<N>, weight: number): void {
    t.weight = weight;
  }

  /** A tenant at its concurrency quota is blocked: skipped by `next` until unblocked. */
  setBlocked(t: WfqTenant<N>, blocked: boolean): void {
    if (t.blocked === blocked) return;
    t.blocked = blocked;
    this.refresh(t, -1);
  }

  enqueue(t: WfqTenant<N>, node: N): void {
    const lane = node.lane;
    const fifo = t.lanes[lane as 0 | 1 | 2];
    const finish = Math.max(this.clock[lane]!, t.lastFinish[lane]!) + 1 / t.weight;
    t.lastFinish[lane] = finish;
    node.finish = finish;
    node.seq = this.seq++;
    node.removed = false;
    fifo.push(node);
    t.count++;
    this.count++;
    if (fifo.peek() === node) this.refresh(t, lane);
  }

  /** Take a queued node out (cancelled before dispatch). It must be queued in `t`. */
  remove(t: WfqTenant<N>, node: N): void {
    node.removed = true;
    t.count--;
    this.count--;
    t.lanes[node.lane as 0 | 1 | 2].noteRemoved();
    this.refresh(t, node.lane);
  }

  /** Pop the next node to dispatch at `now`, or undefined if every non-blocked tenant is empty. */
  next(now: number): N | undefined {
    // The waiting heap's key is each tenant's oldest enqueuedAt: the aging test reads no tenant.
    for (let id = this.waiting.peek(); id >= 0; id = this.waiting.peek()) {
      if (now - this.waiting.peekA() < this.agingMs) break;
      const top = this.members[id]!;
      const head = oldest(top)!;
      this.waiting.delete(id);
      top.agedFinish = Math.max(top.agedFinish, this.agedClock);
      this.aged.set(id, top.agedFinish + 1 / top.weight, head.seq);
    }
    for (let id = this.aged.peek(); id >= 0; id = this.aged.peek()) {
      const top = this.members[id]!;
      const head = oldest(top);
      if (head && now - head.enqueuedAt >= this.agingMs) {
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
        return this.serve(top, top.lanes[lane as 0 | 1 | 2].peek()!);
      }
    }
    return undefined;
  }

  private serve(t: WfqTenant<N>, node: N): N {
    const lane = node.lane;
    t.lanes[lane as 0 | 1 | 2].shift();
    t.count--;
    this.count--;
    if (node.finish > this.clock[lane]!) this.clock[lane] = node.finish;
    this.refresh(t, lane);
    return node;
  }

  /** Re-key the tenant from its current heads: in one class heap if only that lane changed (-1: all). */
  private refresh(t: WfqTenant<N>, only: number): void {
    const from = Math.max(only, 0);
    const to = only < 0 ? 2 : only;
    for (let lane = from; lane <= to; lane++) {
      const head = t.blocked ? undefined : t.lanes[lane as 0 | 1 | 2].peek();
      if (head) this.byClass[lane]!.set(t.id, head.finish, head.seq);
      else this.byClass[lane]!.delete(t.id);
    }
    const first = t.blocked || t.count === 0 ? undefined : oldest(t);
    if (!first) {
      this.waiting.delete(t.id);
      this.aged.delete(t.id);
    } else if (this.aged.has(t.id)) {
      this.aged.set(t.id, t.agedFinish + 1 / t.weight, first.seq);
    } else {
      this.waiting.set(t.id, first.enqueuedAt, first.seq);
    }
  }
}
