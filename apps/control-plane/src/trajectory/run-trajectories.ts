// A run's trajectory in the control plane: append (one writer per run, only while the run is not
// terminal), read, tail, seal (its ref stored on the run as `run.trajectory`). Tenant-scoped: another
// tenant's run is `not_found`. This is the API runner endpoints append through.
import { isTerminalStatus, type RunStatus, type TraceEvent, type TrajectoryRef } from '@everdict/run-model';
import type {
  AppendResult,
  TailItem,
  TraceEventDraft,
  TrajectoryPage,
  TrajectoryStore,
} from '@everdict/trajectory-store';
import type { LedgerDatabase } from '../db/database.js';
import { json } from '../db/numeric.js';
import type { Executor, Tx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { mapStoreErrors } from './errors.js';
import { RunLocks } from './run-lock.js';

/**
 * The `runner_journals` epoch (lease epochs start at 1) of what was appended to a run's trajectory while no
 * runner held its lease (an OTLP import): its row is the last such append's range, so the next runner lease's
 * `seqFrom` — the end of the run's furthest journal row (runners/leases.ts) — starts after it.
 */
export const OUTSIDE_LEASE_EPOCH = 0;

export interface RunTrajectoryHead {
  readonly runId: string;
  readonly status: string;
  readonly trajectory: TrajectoryRef | null;
}

export class RunTrajectories {
  readonly locks: RunLocks;

  constructor(
    readonly store: TrajectoryStore,
    private readonly ldb: LedgerDatabase,
  ) {
    this.locks = new RunLocks(ldb);
  }

  /** Appends run-model TraceEvents (zod-validated here; `seq` increasing, re-sent ones skipped). */
  append(tenant: string, runId: string, events: unknown): Promise<AppendResult> {
    return this.#write(tenant, runId, () => this.store.append(tenant, runId, events));
  }

  /** Appends events trusted code already parsed with run-model's TraceEvent schema. */
  appendTrusted(tenant: string, runId: string, events: readonly TraceEvent[]): Promise<AppendResult> {
    return this.#write(tenant, runId, () => this.store.appendTrusted(tenant, runId, events));
  }

  /** Appends drafts numbered after the last stored event; idempotent per `batchKey` (32 lowercase hex). */
  appendDrafts(
    tenant: string,
    runId: string,
    drafts: readonly TraceEventDraft[],
    batchKey: string,
  ): Promise<AppendResult> {
    return this.#write(tenant, runId, () => this.store.appendDrafts(tenant, runId, drafts, batchKey));
  }

  /**
   * Appends run-model TraceEvents (as `append`) once `check` passed in the writer's transaction: a lease check
   * made there holds until the events are written (a revoke or another epoch's grant committing between the
   * check and the write cannot let them land after it). On PGlite the transaction is one of its own.
   */
  appendChecked(
    tenant: string,
    runId: string,
    events: unknown,
    check: (tx: Tx) => Promise<void>,
  ): Promise<AppendResult> {
    return this.locks.run(tenant, runId, (ex) =>
      inTx(ex, async (tx) => {
        await check(tx);
        return this.#writeIn(tx, tenant, runId, () => this.store.append(tenant, runId, events));
      }),
    );
  }

  /**
   * Appends drafts (as `appendDrafts`) unless an outside writer numbers the run's trajectory (`outsideWriterOf`):
   * anything appended meanwhile would take the seqs it posts next, or change what it already named. Then
   * nothing is appended and the answer is `null`. Otherwise the range is recorded under OUTSIDE_LEASE_EPOCH,
   * so the next runner lease's journal starts after it. The run's row is locked while this runs: a claim that
   * would lease the run skips it (SKIP LOCKED) until this commits, or has committed and its lease is seen here.
   */
  appendOutsideLease(
    tenant: string,
    runId: string,
    drafts: readonly TraceEventDraft[],
    batchKey: string,
  ): Promise<AppendResult | null> {
    return this.locks.run(tenant, runId, (ex) =>
      inTx(ex, async (tx) => {
        if (await outsideWriterOf(tx, tenant, runId)) return null;
        const r = await this.#writeIn(tx, tenant, runId, () =>
          this.store.appendDrafts(tenant, runId, drafts, batchKey),
        );
        if (r.appended > 0) {
          const range = { seq_from: r.lastSeq + 1 - r.appended, event_count: r.appended };
          await tx
            .insertInto('runner_journals')
            .values({ run_id: runId, epoch: OUTSIDE_LEASE_EPOCH, ...range })
            .onConflict((oc) => oc.columns(['run_id', 'epoch']).doUpdateSet(range))
            .execute();
        }
        return r;
      }),
    );
  }

  /** A page of the run's trajectory (offset counted in events; live or sealed). */
  async read(
    tenant: string,
    runId: string,
    page: { offset: number; limit: number },
  ): Promise<TrajectoryPage> {
    const row = await this.run(this.ldb.db, tenant, runId);
    // Another replica may have appended: a live trajectory's head is re-read from storage (a sealed one is final).
    if (this.ldb.dialect === 'postgres' && !row.trajectory) this.store.forget(tenant, runId);
    return mapStoreErrors(() => this.store.read(tenant, runId, page));
  }

  /**
   * Follows the run's trajectory from `offset` until it is sealed or `signal` aborts — or, for a run that
   * ended without recording an event (its trajectory is never sealed: `seal` answers null), once it ended.
   */
  async tail(
    tenant: string,
    runId: string,
    opts: { offset: number; signal: AbortSignal },
  ): Promise<AsyncGenerator<TailItem>> {
    await this.run(this.ldb.db, tenant, runId);
    // Asked only while the tail waits on an empty trajectory (one with events is sealed at the run's end).
    const ended = async (eventCount: number) => {
      if (eventCount > 0) return false;
      const row = await this.run(this.ldb.db, tenant, runId);
      return isTerminalStatus(row.status as RunStatus) && !row.trajectory;
    };
    return this.store.tail(tenant, runId, { ...opts, ended });
  }

  /**
   * Seals the trajectory of a terminal run and stores its ref on the run (idempotent). A run that recorded
   * no event has no trajectory: nothing is sealed and `run.trajectory` stays absent (nothing was observed).
   */
  async seal(tenant: string, runId: string): Promise<TrajectoryRef | null> {
    return this.locks.run(tenant, runId, async (ex) => {
      const row = await this.run(ex, tenant, runId);
      if (!isTerminalStatus(row.status as RunStatus))
        throw new ControlPlaneError(
          'conflict',
          `run ${runId} is ${row.status}: its trajectory is sealed at its end`,
        );
      if (row.trajectory) return row.trajectory;
      const head = await mapStoreErrors(() => this.store.head(tenant, runId));
      if (head.status === 'live' && head.eventCount === 0) return null;
      const { ref } = await mapStoreErrors(() => this.store.seal(tenant, runId));
      await ex
        .updateTable('runs')
        .set({ trajectory: json(ref) })
        .where('tenant_id', '=', tenant)
        .where('id', '=', runId)
        .execute();
      return ref;
    });
  }

  /** The run as far as its trajectory is concerned (`not_found` for another tenant's run). */
  async head(tenant: string, runId: string): Promise<RunTrajectoryHead> {
    const row = await this.run(this.ldb.db, tenant, runId);
    return { runId, status: row.status, trajectory: row.trajectory };
  }

  #write(tenant: string, runId: string, fn: () => Promise<AppendResult>): Promise<AppendResult> {
    return this.locks.run(tenant, runId, (ex) => this.#writeIn(ex, tenant, runId, fn));
  }

  /** `fn` as the run's writer, `ex` holding its lock: refused once the run is terminal; marks the run open. */
  async #writeIn(
    ex: Executor,
    tenant: string,
    runId: string,
    fn: () => Promise<AppendResult>,
  ): Promise<AppendResult> {
    const row = await this.run(ex, tenant, runId);
    if (isTerminalStatus(row.status as RunStatus) || row.trajectory)
      throw new ControlPlaneError(
        'trajectory_sealed',
        `run ${runId} is ${row.status}: its trajectory takes no events`,
        {
          runId,
          status: row.status,
        },
      );
    // The first append marks the run, so its terminal transition queues the seal (0013). The mark is taken
    // only while the run is not terminal — on the latest row version, waiting for a settle in flight — so a
    // run that settled since the read above refuses the append instead of missing its seal.
    if (!row.open) {
      const marked = await ex
        .updateTable('runs')
        .set({ trajectory_open: true })
        .where('tenant_id', '=', tenant)
        .where('id', '=', runId)
        .where('status', 'not in', ['succeeded', 'failed', 'cancelled'])
        .executeTakeFirst();
      if (Number(marked.numUpdatedRows) === 0)
        throw new ControlPlaneError(
          'trajectory_sealed',
          `run ${runId} is terminal: its trajectory takes no events`,
          {
            runId,
          },
        );
    }
    // Another replica may have appended since this process last looked: re-read the head from storage.
    if (this.ldb.dialect === 'postgres') this.store.forget(tenant, runId);
    return mapStoreErrors(fn);
  }

  private async run(
    ex: Executor,
    tenant: string,
    runId: string,
  ): Promise<{ status: string; trajectory: TrajectoryRef | null; open: boolean }> {
    const row = await ex
      .selectFrom('runs')
      .select(['status', 'trajectory', 'trajectory_open'])
      .where('tenant_id', '=', tenant)
      .where('id', '=', runId)
      .executeTakeFirst();
    if (!row) throw notFound('run', runId);
    return {
      status: row.status,
      trajectory: (row.trajectory as TrajectoryRef | null) ?? null,
      open: row.trajectory_open,
    };
  }
}

/**
 * Who numbers the run's trajectory itself now, so that nothing else may append to it (null: no one — the
 * control plane's own writers number after the last stored event). THE rule, locking the run's row
 * (FOR NO KEY UPDATE) first:
 *   - `runner`: a runner holds its lease — the grant opened the journal of the lease's epoch
 *     (runners/leases.ts); the runner posts it at seqs of its own from the lease's `seqFrom` on, what its
 *     attestation commits to. Between leases no one does: the next lease's `seqFrom` starts after what was
 *     appended meanwhile (OUTSIDE_LEASE_EPOCH).
 *   - `agent-host`: the run is an agent turn, leased or not — its trajectory is the transcript its agent host
 *     (or agent service: the only executor of kind `agent`, executors/registry.ts) writes. A holder numbers
 *     its events after the transcript it loaded at its lease, a park names the transcript's address (the
 *     snapshot its resume must offer again), an attestation's journal root is that address, and a new turn's
 *     opening message is written when its transcript is empty.
 */
export async function outsideWriterOf(
  tx: Tx,
  tenant: string,
  runId: string,
): Promise<'runner' | 'agent-host' | null> {
  const run = await tx
    .selectFrom('runs')
    .select('kind')
    .where('tenant_id', '=', tenant)
    .where('id', '=', runId)
    .forNoKeyUpdate()
    .executeTakeFirst();
  if (run?.kind === 'agent') return 'agent-host';
  const runnerLease = await tx
    .selectFrom('run_leases as l')
    .innerJoin('runner_journals as j', (join) =>
      join.onRef('j.run_id', '=', 'l.run_id').onRef('j.epoch', '=', 'l.epoch'),
    )
    .select('l.run_id')
    .where('l.run_id', '=', runId)
    .executeTakeFirst();
  return runnerLease ? 'runner' : null;
}

/** `fn` in `ex`'s transaction, or in one of its own (PGlite's run lock holds no transaction). */
const inTx = <T>(ex: Executor, fn: (tx: Tx) => Promise<T>): Promise<T> =>
  ex.isTransaction ? fn(ex as Tx) : ex.transaction().execute(fn);
