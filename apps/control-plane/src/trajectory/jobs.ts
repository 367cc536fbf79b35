// The trajectory background work of one replica: the seal queue (runs made terminal, queued by a trigger
// in the same transaction as their settle; sealed here, outside the hot settle transaction), the periodic
// retention pass and the artifact sweep after it. All are safe on several replicas: a queue entry is leased
// (FOR UPDATE SKIP LOCKED), a lease that outlives a crashed replica expires and another picks the entry up;
// retention deletions are idempotent and recorded once per trajectory; the sweep decides each address under
// its advisory lock (artifact-sweep.ts).
import { setTimeout as delay } from 'node:timers/promises';
import { applyRetention, type DeletionRecord, type RetentionCandidate } from '@everdict/trajectory-store';
import { sql } from 'kysely';
import { type FallbackPoll, NudgedLooks } from '../db/fallback-poll.js';
import { json } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { isControlPlaneError } from '../errors.js';
import type { Deps } from '../services/context.js';
import { type ArtifactSweepPass, sweepTenantArtifacts } from './artifact-sweep.js';
import { mapStoreErrors } from './errors.js';
import type { RunTrajectories } from './run-trajectories.js';

export interface TrajectoryJobOptions {
  /** How often the seal queue is polled (default 500 ms). */
  readonly sealPollMs?: number;
  /** Entries claimed per pass (default 16). */
  readonly sealBatch?: number;
  /** How long a claimed entry is this replica's before another may take it (default 60 s). */
  readonly sealLeaseMs?: number;
  /**
   * While this says the process is alone on its database (db/fallback-poll.ts), the seal queue is polled at the
   * tick after a `nudge()` (the core nudges at every fact: a run made terminal writes one in the transaction that
   * queues its seal), and every `aloneMs` otherwise. Absent: every `sealPollMs`.
   */
  readonly fallback?: Pick<FallbackPoll, 'alone' | 'aloneMs'>;
  /** How often retention and the artifact sweep run (default 1 h; the first pass one interval after start). */
  readonly retentionIntervalMs?: number;
}

export interface SealPass {
  readonly sealed: number;
  readonly empty: number;
  readonly failed: number;
}

export class TrajectoryJobs {
  readonly #abort = new AbortController();
  readonly #loops: Promise<void>[] = [];
  readonly #opts: Required<Omit<TrajectoryJobOptions, 'fallback'>>;
  readonly #sealLooks: NudgedLooks;

  constructor(
    private readonly deps: Deps,
    private readonly trajectories: RunTrajectories,
    options: TrajectoryJobOptions,
  ) {
    this.#opts = {
      sealPollMs: options.sealPollMs ?? 500,
      sealBatch: options.sealBatch ?? 16,
      sealLeaseMs: options.sealLeaseMs ?? 60_000,
      retentionIntervalMs: options.retentionIntervalMs ?? 3_600_000,
    };
    this.#sealLooks = new NudgedLooks(options.fallback, this.#opts.sealPollMs);
  }

  start(): void {
    this.#loops.push(
      this.#every(this.#opts.sealPollMs, async () => {
        if (this.#sealLooks.look()) await this.sealDue();
      }),
    );
    this.#loops.push(
      this.#every(this.#opts.retentionIntervalMs, async () => {
        await this.retain();
        await this.sweepArtifacts();
      }),
    );
  }

  /** A fact was announced: a seal may have been queued (see `fallback`). */
  nudge(): void {
    this.#sealLooks.nudge();
  }

  /** Seal-queue polls skipped while alone and nothing was announced (see `fallback`). */
  get skippedSealPolls(): number {
    return this.#sealLooks.skipped;
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled(this.#loops);
  }

  /** One pass over the due seal-queue entries: seal each run's trajectory, store its ref on the run. */
  async sealDue(): Promise<SealPass> {
    const { db } = this.deps;
    const claimed = await sql<{ run_id: string; tenant_id: string }>`
      UPDATE trajectory_seal_queue
         SET not_before = now() + make_interval(secs => ${this.#opts.sealLeaseMs / 1000}),
             attempts = attempts + 1
       WHERE run_id IN (SELECT run_id FROM trajectory_seal_queue WHERE not_before <= now()
                         ORDER BY not_before LIMIT ${this.#opts.sealBatch} FOR UPDATE SKIP LOCKED)
      RETURNING run_id, tenant_id, attempts`.execute(db);
    let sealed = 0;
    let empty = 0;
    let failed = 0;
    for (const entry of claimed.rows) {
      try {
        const ref = await this.trajectories.seal(entry.tenant_id, entry.run_id);
        if (ref) sealed++;
        else empty++;
        await db.deleteFrom('trajectory_seal_queue').where('run_id', '=', entry.run_id).execute();
      } catch (e) {
        if (isControlPlaneError(e) && e.code === 'not_found') {
          await db.deleteFrom('trajectory_seal_queue').where('run_id', '=', entry.run_id).execute();
          continue;
        }
        failed++;
        this.deps.log('warn', 'trajectory seal failed; retried later', {
          runId: entry.run_id,
          error: String(e),
        });
        await sql`UPDATE trajectory_seal_queue
                     SET last_error = ${String(e).slice(0, 2000)},
                         not_before = now() + make_interval(secs => least(300, 2 * attempts))
                   WHERE run_id = ${entry.run_id}`.execute(db);
      }
    }
    return { sealed, empty, failed };
  }

  /** Seal-queue entries not yet done (for tests and /metrics-style checks). */
  async pendingSeals(): Promise<number> {
    const r = await sql<{ n: string | number }>`SELECT count(*) AS n FROM trajectory_seal_queue`.execute(
      this.deps.db,
    );
    return Number(r.rows[0]?.n ?? 0);
  }

  /**
   * One retention pass over every tenant with a `trajectoryRetentionDays` policy, at the core's clock:
   * sealed trajectories older than N days are deleted unless they are evidence (a run record names them —
   * the run's `trajectory.digest` — or they carry scores). Each deletion is recorded in
   * `trajectory_deletions` (and as the store's tombstone).
   */
  async retain(now: Date = this.deps.clock()): Promise<DeletionRecord[]> {
    const { db } = this.deps;
    const policies = await db
      .selectFrom('trajectory_policies')
      .select(['tenant_id', 'retention_days'])
      .where('retention_days', 'is not', null)
      .orderBy('tenant_id')
      .execute();
    const all: DeletionRecord[] = [];
    for (const p of policies) {
      const deletions: DeletionRecord[] = [];
      try {
        await mapStoreErrors(() =>
          applyRetention(this.trajectories.store, p.tenant_id, {
            trajectoryRetentionDays: p.retention_days,
            now,
            isEvidence: (c) => this.isEvidence(c),
            // The decision, the deletion and its record under the trajectory's writer lock, which a score is
            // recorded under too (service.ts): a score committed meanwhile is seen here, or its recorder sees
            // the tombstone; and each deletion is recorded as it is made, whatever fails later in the pass.
            exclusive: (c, decide) =>
              this.trajectories.locks.run(c.tenant, c.trajectoryId, async (ex) => {
                const d = await decide();
                if (d) {
                  await recordDeletion(ex, d);
                  deletions.push(d);
                }
                return d;
              }),
          }),
        );
      } catch (e) {
        // One tenant's storage failing stops its pass, not every other tenant's.
        this.deps.log('warn', 'trajectory retention failed for a tenant; retried next pass', {
          tenant: p.tenant_id,
          error: String(e),
        });
      }
      if (deletions.length > 0) {
        this.deps.observe.deleted?.('trajectory', deletions.length);
        this.deps.log('info', 'trajectory retention deleted sealed trajectories', {
          tenant: p.tenant_id,
          count: deletions.length,
        });
      }
      all.push(...deletions);
    }
    return all;
  }

  /**
   * One artifact sweep over every tenant (artifact-sweep.ts): artifacts no run needs — uploads of attempts that
   * were lost, killed or refused, and ones a settled run does not claim — and staged uploads older than a day
   * are deleted. One tenant's storage failing stops its pass, not the others'.
   */
  async sweepArtifacts(now: Date = this.deps.clock()): Promise<ArtifactSweepPass[]> {
    const tenants = await this.deps.db.selectFrom('tenants').select('id').orderBy('id').execute();
    const passes: ArtifactSweepPass[] = [];
    for (const { id } of tenants) {
      try {
        const pass = await mapStoreErrors(() =>
          sweepTenantArtifacts(this.deps.db, this.trajectories.store.backend, id, now),
        );
        if (pass.deleted.length > 0 || pass.uploadsDeleted > 0) {
          this.deps.observe.deleted?.('artifact', pass.deleted.length);
          this.deps.observe.deleted?.('upload', pass.uploadsDeleted);
          this.deps.log('info', 'artifact sweep deleted what no run needs', {
            tenant: id,
            artifacts: pass.deleted.length,
            uploads: pass.uploadsDeleted,
          });
        }
        passes.push(pass);
      } catch (e) {
        this.deps.log('warn', 'artifact sweep failed for a tenant; retried next pass', {
          tenant: id,
          error: String(e),
        });
      }
    }
    return passes;
  }

  /** Evidence is never deleted: a run record names it, or it carries scores. */
  async isEvidence(c: RetentionCandidate): Promise<boolean> {
    const { db } = this.deps;
    const scored = await db
      .selectFrom('trajectory_scores')
      .select('id')
      .where('tenant_id', '=', c.tenant)
      .where('trajectory_id', '=', c.trajectoryId)
      .limit(1)
      .executeTakeFirst();
    if (scored) return true;
    if (c.provenance) return false; // an imported trajectory is no run's
    const named = await db
      .selectFrom('runs')
      .select('id')
      .where('tenant_id', '=', c.tenant)
      .where('id', '=', c.trajectoryId)
      .where(sql<boolean>`trajectory->>'digest' = ${c.digest}`)
      .executeTakeFirst();
    if (named) return true;
    const runScored = await db
      .selectFrom('scores')
      .select('id')
      .where('tenant_id', '=', c.tenant)
      .where('run_id', '=', c.trajectoryId)
      .limit(1)
      .executeTakeFirst();
    return runScored !== undefined;
  }

  /**
   * `fn` every `ms` until stopped. Each wait is node's `timers/promises` one, which takes its listener off the
   * stop signal when the timer fires: a listener added per wait and left there (a `{ once: true }` listener
   * goes only when the signal aborts) grew the signal by one every seal poll, for the process's life.
   */
  async #every(ms: number, fn: () => Promise<void>): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted) {
      await delay(ms, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) return;
      try {
        await fn();
      } catch (e) {
        this.deps.log('warn', 'trajectory job failed', { error: String(e) });
      }
    }
  }
}

/** One retention deletion in `trajectory_deletions` (once per trajectory). */
async function recordDeletion(ex: Executor, d: DeletionRecord): Promise<void> {
  await ex
    .insertInto('trajectory_deletions')
    .values({
      tenant_id: d.tenant,
      trajectory_id: d.trajectoryId,
      digest: d.digest,
      sealed_at: d.sealedAt,
      deleted_at: d.deletedAt,
      reason: d.reason,
      record: json(d),
    })
    .onConflict((oc) => oc.columns(['tenant_id', 'trajectory_id']).doNothing())
    .execute();
}
