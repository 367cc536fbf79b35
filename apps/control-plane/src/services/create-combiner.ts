// The create combiner (runs.create only): creates arriving while a batch is in flight are admitted together
// in the next one, whatever their tenants. A batch is TWO statements, whatever its size and tenant count:
// ONE read of every tenant's admission snapshot (admission-store/sql/load.ts), the gate decisions in order in memory (each
// sees the previous ones' effects, so caps stay exact and decisions equal sequential creates'), then ONE
// autocommit write (commit-batch.ts) carrying admissions, slots, run rows, facts and the hot rows, all or
// nothing. Refusals are returned to their callers only. Items a batch cannot carry (caused runs, slices,
// sessions, agents) and a batch that lost a cross-replica race (a guard short: the write rolled back whole) go
// one by one the old way.
import {
  type AdmissionPlan,
  type AdmissionSnapshot,
  type Admitted,
  decide,
  type Envelope,
} from '@everdict/admission';
import { commitBatch } from '../admission-store/sql/commit-batch.js';
import { loadTaskSnapshots, type TaskSnapshot } from '../admission-store/sql/load.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { EVENTS_CHANNEL, insertEventsSql, notifyAfterCommit } from '../ledger/events.js';
import { insertRunsSql, type RunRow, withSlot } from '../ledger/runs.js';
import { asControlPlaneError } from './boundary.js';
import { type Deps, DISPATCH_CHANNEL, dispatchPayload, INLINE_LANE_KINDS } from './context.js';
import {
  type Actor,
  AdmissionRaced,
  createRunTx,
  documentOf,
  duplicateOf,
  type PreparedCreate,
  prepareCreate,
  refusalToError,
  slotOfDecision,
} from './lifecycle.js';
import { factsToEvents } from './transition.js';
import type { AdmissionView, CreateRunContext, CreateRunInput } from './types.js';

export type Created = { row: RunRow; admission: AdmissionView };
interface Item {
  who: Actor;
  raw: CreateRunInput;
  ctx: CreateRunContext;
  prep: PreparedCreate;
  resolve(v: Created): void;
  reject(e: unknown): void;
}
const MAX_BATCH = 64;

/** One create the old way: its own transaction, retried on a race. */
export async function createOne(
  deps: Deps,
  who: Actor,
  raw: CreateRunInput,
  ctx: CreateRunContext,
): Promise<Created> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await withTx(deps.db, (tx) => createRunTx(tx, deps, who, raw, ctx, { ownTx: true }));
    } catch (e) {
      if (!(e instanceof AdmissionRaced)) throw e;
      if (attempt >= 8) throw new ControlPlaneError('conflict', 'admission kept racing; retry');
    }
  }
}

const combinable = (p: PreparedCreate): boolean =>
  p.request.lifetime === 'task' &&
  p.request.causedByRunId === undefined &&
  p.request.envelope === undefined &&
  p.request.agentId === undefined;

export interface CombinerOptions {
  /**
   * Under load — the previous batch ended less than `batchMs` ago — a create waits up to `batchMs` (or until
   * a batch is full) for company before its batch is written. Idle, it is written at once. Default 0: a
   * batch is whatever arrived while the previous one was in flight (EVERDICT_CREATE_BATCH_MS).
   */
  batchMs?: number;
}

/** The combined create: call it like `createOne`; `stats` counts batches (tests, tooling). */
export function createCombiner(deps: Deps, options: CombinerOptions = {}) {
  const batchMs = options.batchMs ?? 0;
  let queue: Item[] = [];
  let busy = false;
  let lastEnd = Number.NEGATIVE_INFINITY;
  let full: (() => void) | undefined;
  const drain = async () => {
    busy = true;
    try {
      if (batchMs > 0 && performance.now() - lastEnd < batchMs && queue.length < MAX_BATCH)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, batchMs);
          full = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      full = undefined;
      while (queue.length > 0) {
        const batch = queue.slice(0, MAX_BATCH);
        queue = queue.slice(MAX_BATCH);
        stats.batches += 1;
        stats.largest = Math.max(stats.largest, batch.length);
        // runBatch settles every item itself; should it throw anyway, no caller is left hanging.
        await runBatch(deps, batch).catch((e: unknown) => {
          for (const it of batch) it.reject(e);
        });
      }
    } finally {
      busy = false;
      lastEnd = performance.now();
    }
  };
  const stats = { batches: 0, largest: 0 };
  const submit = (who: Actor, raw: CreateRunInput, ctx: CreateRunContext = {}): Promise<Created> =>
    new Promise<Created>((resolve, reject) => {
      // Parsed and validated now, while the batch in flight waits on the database: only the decisions and
      // the rows are left for the batch's own critical path.
      let prep: PreparedCreate;
      try {
        prep = prepareCreate(deps, who, raw, ctx);
      } catch (e) {
        reject(e);
        return;
      }
      queue.push({ who, raw, ctx, prep, resolve, reject });
      if (!busy) void drain();
      else if (queue.length >= MAX_BATCH) full?.();
    });
  return Object.assign(submit, { stats });
}

async function oneByOne(deps: Deps, items: readonly Item[]): Promise<void> {
  for (const it of items) await createOne(deps, it.who, it.raw, it.ctx).then(it.resolve, it.reject);
}

async function runBatch(deps: Deps, batch: readonly Item[]): Promise<void> {
  const groups = new Map<string, Item[]>();
  const single: Item[] = [];
  for (const it of batch) {
    if (!combinable(it.prep)) single.push(it);
    else groups.set(it.who.tenant, [...(groups.get(it.who.tenant) ?? []), it]);
  }
  const tenants = [...groups.values()];
  const combined = tenants.flat();
  const work = combined.length === 0 ? Promise.resolve() : combinedBatch(deps, tenants);
  await Promise.all([work, ...single.map((it) => oneByOne(deps, [it]))]);
}

type Outcome = { ok: Created } | { err: unknown };
type Decided = Outcome | { dupOf: number } | { plan: AdmissionPlan } | { prior: Admitted };
interface TenantDecisions {
  tenant: string;
  preps: PreparedCreate[];
  decided: Decided[];
}

/**
 * The combinable items of every tenant: ONE read (every tenant's snapshot), the decisions in memory, ONE
 * autocommit write (admissions, slots, run rows, facts, hot rows; all or nothing). On a lost race, one by one.
 */
async function combinedBatch(deps: Deps, tenants: readonly (readonly Item[])[]): Promise<void> {
  const items = tenants.flat();
  let outcomes: Outcome[][] | 'raced';
  try {
    outcomes = await decideAndWrite(deps, tenants);
  } catch (e) {
    for (const it of items) it.reject(e);
    return;
  }
  if (outcomes === 'raced') return oneByOne(deps, items);
  for (const [g, group] of tenants.entries()) {
    for (const [i, it] of group.entries()) {
      const o = outcomes[g]?.[i];
      if (!o) it.reject(new Error('combiner: missing outcome'));
      else if ('ok' in o) {
        if (o.ok.admission.decision === 'admitted') deps.observe.admission('admitted', it.prep.kind);
        it.resolve(o.ok);
      } else it.reject(o.err);
    }
  }
}

async function decideAndWrite(
  deps: Deps,
  tenants: readonly (readonly Item[])[],
): Promise<Outcome[][] | 'raced'> {
  const preps = tenants.map((items) => items.map((it) => it.prep));
  const snaps = await loadTaskSnapshots(
    deps.db,
    preps.map((ps) => ({ tenant: ps[0]?.who.tenant ?? '', requestIds: ps.map((p) => p.request.requestId) })),
  );
  const all = preps.map((ps) => decideTenant(deps, ps, snaps));
  const built = all.flatMap((t, g) =>
    t.decided.flatMap((o, i) =>
      'plan' in o ? [{ g, i, plan: o.plan, ...t.preps[i]!.build(o.plan.decision) }] : [],
    ),
  );
  const rows = new Map<string, RunRow>(); // `${g}:${i}` → row
  if (built.length > 0) {
    const events = factsToEvents(built.flatMap((b) => b.facts));
    const written = await commitBatch<RunRow>(
      deps.db,
      all.map((t) => t.decided.flatMap((o) => ('plan' in o ? [o.plan] : []))),
      [
        {
          name: 'run_rows',
          query: insertRunsSql(built.map((b) => documentOf(b.run, b.plan.decision))),
          rows: built.length,
        },
        { name: 'facts', query: insertEventsSql(events), rows: events.length },
      ],
      'run_rows',
    );
    if (written === 'raced') return 'raced';
    // Committed: this process's dispatch loop claims now, without waiting for its NOTIFY to come back — when
    // it could claim one of these runs (it executes the inline lane only: a wake for runner kinds alone ran
    // a claim that could find nothing new); the other listeners (replicas, feeds, the trigger loop, the
    // runners' long-polls) are told after the commit, off the commit's flush.
    if (built.some((b) => INLINE_LANE_KINDS.has(b.run.kind))) deps.localDispatch?.wake();
    void notifyAfterCommit(
      deps.db,
      [
        EVENTS_CHANNEL,
        [
          DISPATCH_CHANNEL,
          dispatchPayload(
            deps.localDispatch?.token ?? '',
            built.map((b) => b.run.kind),
          ),
        ],
      ],
      (e) => deps.log('warn', 'create: notify failed (listeners poll)', { error: String(e) }),
      deps.ldb,
    );
    deps.queueStats.noteEnqueued(built.length);
    const byId = new Map(written.committed.map((r) => [r.id, r]));
    for (const b of built)
      rows.set(`${b.g}:${b.i}`, withSlot(byId.get(b.run.id)!, slotOfDecision(b.plan.decision)));
  }
  const out: Outcome[][] = [];
  for (const [g, t] of all.entries()) {
    const res: Outcome[] = [];
    for (const [i, o] of t.decided.entries()) {
      const p = t.preps[i]!;
      if ('plan' in o)
        res.push({ ok: { row: rows.get(`${g}:${i}`)!, admission: view('admitted', o.plan.decision) } });
      else if ('dupOf' in o) {
        const src = t.decided[o.dupOf];
        if (!src || !('plan' in src)) throw new Error('combiner: bad duplicate');
        res.push({
          ok: { row: rows.get(`${g}:${o.dupOf}`)!, admission: view('duplicate', src.plan.decision) },
        });
      } else if ('prior' in o) res.push({ ok: await duplicateOf(deps.db, t.tenant, o.prior, p.requestId) });
      else res.push(o);
    }
    out.push(res);
  }
  return out;
}

/** One tenant's items: the gate decisions in order in memory, each against the previous ones' effects. */
function decideTenant(
  deps: Deps,
  preps: readonly PreparedCreate[],
  snaps: ReadonlyMap<string, TaskSnapshot>,
): TenantDecisions {
  const first = preps[0];
  if (!first) throw new Error('combiner: unprepared item');
  const tenant = first.who.tenant;
  const loaded = snaps.get(tenant);
  if (!loaded) throw new Error(`combiner: no snapshot for ${tenant}`);
  const inBatch = new Map<string, number>(); // requestId → index of the item that admitted it
  let snap: AdmissionSnapshot = loaded.snapshot;
  const decided: Decided[] = [];
  for (const p of preps) {
    const id = p.request.requestId;
    const at = inBatch.get(id);
    if (at !== undefined) {
      decided.push({ dupOf: at });
      continue;
    }
    try {
      const v = asControlPlaneError(() =>
        decide({ ...snap, prior: loaded.priors.get(id) ?? null }, p.request, p.now.getTime()),
      );
      if ('prior' in v) decided.push({ prior: v.prior });
      else if (!('plan' in v)) decided.push({ err: refusalToError(deps, p.kind, v.decision) });
      else {
        inBatch.set(id, decided.length);
        decided.push({ plan: v.plan });
        snap = afterAdmit(snap, v.plan);
      }
    } catch (e) {
      decided.push({ err: e });
    }
  }
  return { tenant, preps: [...preps], decided };
}

const view = (decision: 'admitted' | 'duplicate', d: Admitted): AdmissionView => ({
  decision,
  class: d.class,
  envelopeId: d.envelopeId,
  position: d.position,
});

/** The snapshot as the next sequential create would read it after `plan` committed (commit.ts, task). */
function afterAdmit(snap: AdmissionSnapshot, plan: AdmissionPlan): AdmissionSnapshot {
  const c = plan.slot.class;
  const on = new Set(plan.pathIds);
  const path = snap.path.map(
    (e): Envelope =>
      on.has(e.id) ? { ...e, inFlight: e.inFlight + 1, spent: { ...e.spent, runs: e.spent.runs + 1 } } : e,
  );
  const byClass = { ...snap.load.queuedByClass, [c]: snap.load.queuedByClass[c] + 1 };
  return { ...snap, path, load: { ...snap.load, queued: snap.load.queued + 1, queuedByClass: byClass } };
}
