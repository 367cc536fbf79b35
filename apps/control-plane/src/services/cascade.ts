// Cascade cancellation (spec §5.5, O8): cancelling a run cancels its non-terminal causal descendants but
// those the tenant's policy opts out (`cascade: {skipKinds, skipCauses}`) — which runs, is admission's
// `cascade` kernel, not a second copy. A large tree is cancelled in BOUNDED transactions (≤ 500 runs each)
// driven by a durable job (`cascade_jobs`, migration 0010): the root is cancelled and the job opened in one
// transaction; each batch locks its runs, cancels those still non-terminal and counts itself on the job in
// the next. A crash halfway leaves the job open, and the next start resumes it (`resumePending`). A run is
// cancelled at most once: each batch re-reads its runs under lock and skips the terminal ones.
import {
  CascadePolicy,
  type CausalNode,
  cascade,
  type TenantPolicyInput,
  tenantPolicy,
} from '@everdict/admission';
import { isTerminalStatus, type RunCause, type RunStatus } from '@everdict/run-model';
import { sql } from 'kysely';
import { PgAdmissionStore } from '../admission-store/index.js';
import { json } from '../db/numeric.js';
import { type Executor, type Tx, withTx } from '../db/tx.js';
import type { Deps } from './context.js';
import { transitionTx } from './transition.js';

/** The most runs one cascade transaction cancels. */
export const MAX_CASCADE_BATCH = 500;

export interface CascadeOptions {
  /** Runs cancelled per transaction, 1…500. Default 500. */
  batchSize?: number;
  /**
   * Called after each committed batch (before the next starts). A test stops the core here to prove a
   * crash halfway resumes on the next start; a throw ends this pass and leaves the job open.
   */
  afterBatch?: (batch: {
    jobId: string;
    batch: number;
    cancelled: readonly string[];
  }) => void | Promise<void>;
}

/** The tenant's cascade opt-out, as its admission policy holds it (defaults when none is stored). */
export async function tenantCascade(ex: Executor, tenant: string): Promise<CascadePolicy> {
  const row = await ex
    .selectFrom('adm_tenants')
    .select('policy')
    .where('tenant', '=', tenant)
    .executeTakeFirst();
  return row ? tenantPolicy(row.policy as TenantPolicyInput).cascade : CascadePolicy.parse({});
}

/** In the root's cancel transaction: open the job that cascades it (the opt-out is copied now). */
export async function openCascade(
  tx: Tx,
  deps: Deps,
  tenant: string,
  rootRunId: string,
  reason: string,
): Promise<string> {
  const policy = await tenantCascade(tx, tenant);
  const id = deps.ids('cascade');
  await tx
    .insertInto('cascade_jobs')
    .values({
      id,
      tenant_id: tenant,
      root_run_id: rootRunId,
      reason,
      skip_kinds: json(policy.skipKinds),
      skip_causes: json(policy.skipCauses),
      created_at: deps.clock(),
    })
    .execute();
  return id;
}

/**
 * The root's causal subtree (no locks: the batches lock what they change): admission's one walk of the causal
 * tree (`causalSubtree` over `adm_slots`, whose status turns terminal in the transaction that settles the run).
 */
function subtree(ex: Executor, tenant: string, rootRunId: string): Promise<CausalNode[]> {
  return new PgAdmissionStore(ex).causalSubtree(tenant, rootRunId);
}

export class CascadeWorker {
  private readonly batchSize: number;
  private stopping = false;
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    private readonly deps: Deps,
    private readonly options: CascadeOptions = {},
  ) {
    const size = options.batchSize ?? MAX_CASCADE_BATCH;
    if (!Number.isInteger(size) || size < 1 || size > MAX_CASCADE_BATCH)
      throw new RangeError(`cascade batchSize must be an integer in 1…${MAX_CASCADE_BATCH}`);
    this.batchSize = size;
  }

  /** Drive one job to its end; returns the runs this call cancelled (in cancel order). */
  run(jobId: string): Promise<string[]> {
    const p = this.drive(jobId);
    this.running.add(p);
    const forget = () => this.running.delete(p);
    p.then(forget, forget);
    return p;
  }

  /** Resume every open job (a start after a crash). Errors are logged; the jobs stay open. */
  async resumePending(): Promise<void> {
    const jobs = await this.deps.db
      .selectFrom('cascade_jobs')
      .select('id')
      .where('done_at', 'is', null)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    for (const { id } of jobs) {
      if (this.stopping) return;
      try {
        await this.run(id);
      } catch (e) {
        this.deps.log('error', 'cascade resume failed; the job stays open', { jobId: id, error: String(e) });
      }
    }
  }

  /** Stop at the next batch boundary (open jobs resume on the next start). */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.allSettled([...this.running]);
  }

  private async drive(jobId: string): Promise<string[]> {
    const out: string[] = [];
    for (;;) {
      if (this.stopping) return out;
      const job = await this.deps.db
        .selectFrom('cascade_jobs')
        .selectAll()
        .where('id', '=', jobId)
        .executeTakeFirst();
      if (!job || job.done_at) return out;
      const nodes = await subtree(this.deps.db, job.tenant_id, job.root_run_id);
      const targets = cascade(nodes, job.root_run_id, {
        kinds: job.skip_kinds,
        causes: job.skip_causes as RunCause[],
      });
      let progressed = 0;
      for (let i = 0; i < targets.length; i += this.batchSize) {
        if (this.stopping) return out;
        const chunk = targets.slice(i, i + this.batchSize);
        const batch = await withTx(this.deps.db, (tx) => this.cancelBatch(tx, job, chunk));
        if (batch === null) return out; // finished by another replica
        out.push(...batch.cancelled);
        progressed += batch.cancelled.length;
        await this.options.afterBatch?.({ jobId, batch: batch.number, cancelled: batch.cancelled });
      }
      // Nothing left (or nothing this pass could change): the cascade is complete.
      if (progressed === 0) {
        await this.deps.db
          .updateTable('cascade_jobs')
          .set({ done_at: this.deps.clock() })
          .where('id', '=', jobId)
          .where('done_at', 'is', null)
          .execute();
        return out;
      }
    }
  }

  /** One bounded transaction: lock the job and the chunk's runs, cancel those still non-terminal. */
  private async cancelBatch(
    tx: Tx,
    job: { id: string; tenant_id: string; root_run_id: string; reason: string },
    chunk: readonly string[],
  ): Promise<{ number: number; cancelled: string[] } | null> {
    const locked = await tx
      .selectFrom('cascade_jobs')
      .select(['batches', 'done_at'])
      .where('id', '=', job.id)
      .forUpdate()
      .executeTakeFirst();
    if (!locked || locked.done_at) return null;
    const rows = await tx
      .selectFrom('runs')
      .select(['id', 'status'])
      .where('tenant_id', '=', job.tenant_id)
      .where('id', 'in', [...chunk])
      .orderBy('id')
      .forUpdate()
      .execute();
    const cancelled: string[] = [];
    for (const r of rows) {
      if (isTerminalStatus(r.status as RunStatus)) continue;
      await transitionTx(tx, this.deps, job.tenant_id, r.id, {
        type: 'cancel',
        reason: `cascade from ${job.root_run_id}`,
      });
      cancelled.push(r.id);
    }
    const number = locked.batches + 1;
    await tx
      .updateTable('cascade_jobs')
      .set({ batches: number, cancelled: sql<number>`cancelled + ${cancelled.length}` })
      .where('id', '=', job.id)
      .execute();
    return { number, cancelled };
  }
}
