// The memory store's runs as a table: one row per admitted run, a row number indexing typed-array
// columns (the WFQ's node columns included), so a million runs put no object per run on the GC-managed
// heap — only the run id string (a column the caller's id already is; `RunIndex` maps it to its row
// in typed arrays). Strings with
// few distinct values (kind, cause, status, lifetime) are interned to small codes; rare values (agent
// ids, a hand-made plan's decision) sit in sparse side maps. Decisions are rebuilt from the row on
// demand: a repeated request gets an equal decision, not the same object.
import type { RunCause, RunClass, RunKind, RunLifetime, RunStatus } from '@everdict/run-model';
import type { CausalNode } from '../cascade.js';
import type { Admitted } from '../decision.js';
import { LANE } from '../fair-queue.js';
import type { AdmissionPlan, RunSlot } from '../store.js';
import { grown, WfqNodes } from '../wfq-nodes.js';
import type { EnvNode } from './tenant.js';

const CLASSES: readonly RunClass[] = ['interactive', 'background', 'batch'];

/** Strings ↔ small codes, for columns with few distinct values. */
class Interner<T extends string> {
  readonly values: T[] = [];
  private readonly codes = new Map<T, number>();
  code(v: T): number {
    let c = this.codes.get(v);
    if (c === undefined) {
      c = this.values.length;
      this.values.push(v);
      this.codes.set(v, c);
    }
    return c;
  }
}

/** Where a row's run draws from and hangs: resolved by the store, stored by number. */
export interface RowLinks {
  readonly tenant: number;
  readonly tenantId: string;
  /** Its envelope node, null when the plan named an unknown envelope. */
  readonly env: EnvNode | null;
  /** Its causer's row, -1 for a root run. */
  readonly causer: number;
}

export class RunTable extends WfqNodes {
  runId: string[] = [];
  tenant = new Int32Array(0);
  status = new Uint8Array(0);
  kind = new Uint16Array(0);
  cause = new Uint16Array(0);
  lifetime = new Uint8Array(0);
  member = new Uint8Array(0);
  depth = new Int32Array(0);
  children = new Int32Array(0);
  causer = new Int32Array(0);
  /** Each row's envelope node (shared objects, few). */
  envNode: (EnvNode | null)[] = [];
  /** 1: admitted by a request whose id is its run id (no separate decision-map entry). */
  ownRequest = new Uint8Array(0);
  /** NaN: null. */
  expected = new Float64Array(0);
  /** NaN: null. */
  startedAt = new Float64Array(0);
  /** The decision's position (-1: null). */
  ahead = new Int32Array(0);
  queuedAtAdmit = new Int32Array(0);
  readonly statuses = new Interner<RunStatus>();
  readonly kinds = new Interner<RunKind>();
  readonly causes = new Interner<RunCause>();
  readonly lifetimes = new Interner<RunLifetime>();
  /** Rows with an agent id. */
  readonly agents = new Map<number, string>();
  /** Rows whose envelope id names no known envelope (hand-made plans). */
  readonly envIds = new Map<number, string>();
  /** Rows whose decision says something the row cannot rebuild (hand-made plans): kept as given. */
  readonly decisions = new Map<number, Admitted>();
  private readonly tenantIds: string[] = [];

  protected override resize(capacity: number): void {
    super.resize(capacity);
    this.tenant = grown(this.tenant, capacity);
    this.status = grown(this.status, capacity);
    this.kind = grown(this.kind, capacity);
    this.cause = grown(this.cause, capacity);
    this.lifetime = grown(this.lifetime, capacity);
    this.member = grown(this.member, capacity);
    this.depth = grown(this.depth, capacity);
    this.children = grown(this.children, capacity);
    this.causer = grown(this.causer, capacity);
    this.ownRequest = grown(this.ownRequest, capacity);
    this.expected = grown(this.expected, capacity);
    this.startedAt = grown(this.startedAt, capacity);
    this.ahead = grown(this.ahead, capacity);
    this.queuedAtAdmit = grown(this.queuedAtAdmit, capacity);
  }

  /** A new row for the plan's run; `envelopeId` is the id its env node has (when env ≥ 0). */
  add(plan: AdmissionPlan, links: RowLinks): number {
    const s = plan.slot;
    const r = this.alloc();
    this.runId[r] = s.runId;
    this.tenant[r] = links.tenant;
    this.tenantIds[links.tenant] = links.tenantId;
    this.enqueuedAt[r] = s.admittedAt;
    this.lane[r] = LANE[s.class];
    this.status[r] = this.statuses.code(s.status);
    this.kind[r] = this.kinds.code(s.kind);
    this.cause[r] = this.causes.code(s.cause);
    this.lifetime[r] = this.lifetimes.code(s.lifetime);
    this.member[r] = s.member ? 1 : 0;
    this.depth[r] = s.depth;
    this.children[r] = s.children;
    this.causer[r] = links.causer;
    this.envNode[r] = links.env;
    this.ownRequest[r] = plan.decision.requestId === s.runId ? 1 : 0;
    this.expected[r] = s.expectedDurationMs ?? Number.NaN;
    this.startedAt[r] = s.startedAt ?? Number.NaN;
    if (s.agentId !== null) this.agents.set(r, s.agentId);
    if (links.env?.env.id !== s.envelopeId) this.envIds.set(r, s.envelopeId);
    const d = plan.decision;
    this.ahead[r] = d.position ? d.position.tenantAhead : -1;
    this.queuedAtAdmit[r] = d.position ? d.position.tenantQueued : -1;
    if (!repeats(d, s)) this.decisions.set(r, d);
    return r;
  }

  classOf(r: number): RunClass {
    return CLASSES[this.lane[r]!]!;
  }
  statusOf(r: number): RunStatus {
    return this.statuses.values[this.status[r]!]!;
  }
  setStatus(r: number, status: RunStatus): void {
    this.status[r] = this.statuses.code(status);
  }
  isSession(r: number): boolean {
    return this.lifetimes.values[this.lifetime[r]!] === 'session';
  }
  tenantId(r: number): string {
    return this.tenantIds[this.tenant[r]!]!;
  }
  expectedOf(r: number): number | null {
    const v = this.expected[r]!;
    return Number.isNaN(v) ? null : v;
  }

  /** The decision row `r` was admitted with, rebuilt. */
  decision(r: number, requestId: string): Admitted {
    const kept = this.decisions.get(r);
    if (kept) return kept;
    const ahead = this.ahead[r]!;
    return {
      outcome: 'admitted',
      requestId,
      runId: this.runId[r]!,
      tenant: this.tenantId(r),
      class: this.classOf(r),
      lane: this.isSession(r) ? 'session' : 'queue',
      envelopeId: this.envelopeId(r),
      depth: this.depth[r]!,
      position: ahead < 0 ? null : { tenantAhead: ahead, tenantQueued: this.queuedAtAdmit[r]! },
      admittedAt: this.enqueuedAt[r]!,
    };
  }

  envelopeId(r: number): string {
    return this.envIds.get(r) ?? this.envNode[r]!.env.id;
  }

  /** Row `r`'s causal ancestors, its causer first, up to its tree's root (as the cascade sees them). */
  ancestors(r: number): CausalNode[] {
    const out: CausalNode[] = [];
    for (let a = this.causer[r]!; a >= 0; a = this.causer[a]!) {
      const causer = this.causer[a]!;
      out.push({
        runId: this.runId[a]!,
        causedByRunId: causer < 0 ? null : this.runId[causer]!,
        status: this.statusOf(a),
        cause: this.causes.values[this.cause[a]!]!,
        kind: this.kinds.values[this.kind[a]!]!,
      });
    }
    return out;
  }

  /** The row as the store interface returns it: a copy. */
  slot(r: number): RunSlot {
    const causer = this.causer[r]!;
    const started = this.startedAt[r]!;
    return {
      runId: this.runId[r]!,
      tenant: this.tenantId(r),
      kind: this.kinds.values[this.kind[r]!]!,
      cause: this.causes.values[this.cause[r]!]!,
      class: this.classOf(r),
      lifetime: this.lifetimes.values[this.lifetime[r]!]!,
      status: this.statusOf(r),
      causedByRunId: causer < 0 ? null : this.runId[causer]!,
      depth: this.depth[r]!,
      children: this.children[r]!,
      envelopeId: this.envelopeId(r),
      member: this.member[r] === 1,
      agentId: this.agents.get(r) ?? null,
      expectedDurationMs: this.expectedOf(r),
      admittedAt: this.enqueuedAt[r]!,
      startedAt: Number.isNaN(started) ? null : started,
    };
  }
}

/** Does the decision say exactly what the row rebuilds from the slot (always, for plans `decide` made)? */
function repeats(d: Admitted, s: RunSlot): boolean {
  return (
    d.runId === s.runId &&
    d.tenant === s.tenant &&
    d.class === s.class &&
    d.lane === (s.lifetime === 'session' ? 'session' : 'queue') &&
    d.envelopeId === s.envelopeId &&
    d.depth === s.depth &&
    d.admittedAt === s.admittedAt &&
    (d.position === null ||
      ((d.position.tenantAhead | 0) === d.position.tenantAhead &&
        (d.position.tenantQueued | 0) === d.position.tenantQueued &&
        d.position.tenantAhead >= 0))
  );
}
