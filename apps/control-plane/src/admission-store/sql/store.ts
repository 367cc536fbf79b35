// The PostgreSQL AdmissionStore. Every method is one atomic step (its own transaction, or a savepoint in
// the caller's). Caps are conditional UPDATEs (`… WHERE queued < $cap`); claims use FOR UPDATE SKIP LOCKED,
// so replicas sharing one database never admit past a cap, double-dispatch or double-settle.
import {
  type AdmissionKey,
  type AdmissionPlan,
  type AdmissionSnapshot,
  type AdmissionStore,
  type Admitted,
  type CausalNode,
  type CommitResult,
  type Dispatch,
  type Envelope,
  type GlobalPolicy,
  type RunSlot,
  rootEnvelopeId,
  type Settlement,
  type SettleResult,
  type TenantPolicy,
} from '@everdict/admission';
import type { RunCause, RunStatus } from '@everdict/run-model';
import { sql } from 'kysely';
import { json } from '../../db/numeric.js';
import type { Executor } from '../../db/tx.js';
import { causalAncestors, commitCaused } from './causal-tree.js';
import { claimQueued } from './claim.js';
import { commitBatch, isBatchable } from './commit-batch.js';
import { snapshotOf } from './load.js';
import { runningOf } from './released.js';
import { envelopeOf, envelopeRow, slotOf } from './rows.js';
import { abort, atomically } from './scope.js';
import { settleOne } from './settle.js';

export class PgAdmissionStore implements AdmissionStore {
  constructor(private readonly exec: Executor) {}

  /** The same store bound to a caller's transaction (its steps become savepoints). */
  bind(exec: Executor): PgAdmissionStore {
    return new PgAdmissionStore(exec);
  }

  async putTenant(tenant: string, policy: TenantPolicy): Promise<void> {
    await atomically(this.exec, async (tx) => {
      // A new weight applies from the next tag: the last tags are rebased first (admission's Wfq.setWeight).
      const was = await tx
        .selectFrom('adm_tenants')
        .select('weight')
        .where('tenant', '=', tenant)
        .forUpdate()
        .executeTakeFirst();
      if (was && was.weight !== policy.weight) {
        await sql`UPDATE adm_wfq SET start_v = start_v + n / ${was.weight}::float8, n = 0
          WHERE tenant = ${tenant}`.execute(tx);
        await sql`UPDATE adm_tenants SET aged_start = aged_start + aged_n / ${was.weight}::float8, aged_n = 0
          WHERE tenant = ${tenant}`.execute(tx);
      }
      const cols = {
        policy: json(policy),
        weight: policy.weight,
        max_queued: policy.maxQueued,
        max_concurrent: policy.maxConcurrent,
      };
      await tx
        .insertInto('adm_tenants')
        .values({
          tenant,
          ...cols,
          queued: 0,
          queued_interactive: 0,
          queued_background: 0,
          queued_batch: 0,
          running: 0,
          sessions: 0,
          member_sessions: 0,
        })
        .onConflict((oc) => oc.column('tenant').doUpdateSet(cols))
        .execute();
      // At its quota it is blocked: blocking forgets its aged state (admission's Wfq.setBlocked).
      await sql`UPDATE adm_tenants t SET aged_at = NULL WHERE t.tenant = ${tenant} AND ${runningOf('t')} >= t.max_concurrent`.execute(
        tx,
      );
      const root = envelopeRow({
        id: rootEnvelopeId(tenant),
        parentId: null,
        tenant,
        caps: policy.budget,
        spent: { usd: 0, tokens: 0, runs: 0 },
        inFlight: 0,
        inFlightCap: policy.inFlightCap,
      });
      const caps = {
        cap_usd: root.cap_usd,
        cap_tokens: root.cap_tokens,
        cap_runs: root.cap_runs,
        in_flight_cap: root.in_flight_cap,
      };
      await tx
        .insertInto('adm_envelopes')
        .values(root)
        .onConflict((oc) => oc.columns(['tenant', 'id']).doUpdateSet(caps))
        .execute();
    });
  }

  async putGlobal(policy: GlobalPolicy): Promise<void> {
    await this.exec
      .insertInto('adm_global')
      .values({ id: 1, policy: json(policy), sessions: 0, member_sessions: 0 })
      .onConflict((oc) => oc.column('id').doUpdateSet({ policy: json(policy) }))
      .execute();
  }

  async setAgentEnabled(tenant: string, agentId: string, enabled: boolean): Promise<void> {
    await this.exec
      .insertInto('adm_agents')
      .values({ tenant, agent_id: agentId, enabled })
      .onConflict((oc) => oc.columns(['tenant', 'agent_id']).doUpdateSet({ enabled }))
      .execute();
  }

  async loadAdmission(key: AdmissionKey): Promise<AdmissionSnapshot> {
    if (this.exec.isTransaction) return this.load(this.exec, key);
    return (this.exec as Exclude<Executor, { isTransaction: true }>)
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute((tx) => this.load(tx, key));
  }

  private async load(ex: Executor, key: AdmissionKey): Promise<AdmissionSnapshot> {
    const { tenant } = key;
    const [prior, t, g, causerRow, slice, agent, ends] = await Promise.all([
      ex
        .selectFrom('adm_admissions')
        .select('decision')
        .where('tenant', '=', tenant)
        .where('request_id', '=', key.requestId)
        .executeTakeFirst(),
      ex.selectFrom('adm_tenants_now').selectAll().where('tenant', '=', tenant).executeTakeFirst(),
      ex.selectFrom('adm_global').selectAll().where('id', '=', 1).executeTakeFirst(),
      key.causedByRunId === undefined
        ? Promise.resolve(undefined)
        : ex
            .selectFrom('adm_slots')
            .selectAll()
            .where('tenant', '=', tenant)
            .where('run_id', '=', key.causedByRunId)
            .executeTakeFirst(),
      key.sliceId === undefined
        ? Promise.resolve(undefined)
        : ex
            .selectFrom('adm_envelopes')
            .select('id')
            .where('tenant', '=', tenant)
            .where('id', '=', key.sliceId)
            .executeTakeFirst(),
      key.agentId === undefined
        ? Promise.resolve(undefined)
        : ex
            .selectFrom('adm_agents')
            .select('enabled')
            .where('tenant', '=', tenant)
            .where('agent_id', '=', key.agentId)
            .executeTakeFirst(),
      ex
        .selectFrom('adm_slot_ends')
        .select([
          sql<string | null>`min(end_ms) FILTER (WHERE lifetime = 'task')`.as('task_end'),
          sql<string | null>`min(end_ms) FILTER (WHERE lifetime = 'session')`.as('session_end'),
        ])
        .where('tenant', '=', tenant)
        .executeTakeFirst(),
    ]);
    const causer = causerRow ? slotOf(causerRow) : null;
    const path = t ? await envelopePath(ex, tenant, causer ? causer.envelopeId : rootEnvelopeId(tenant)) : [];
    const ancestors = causer ? await causalAncestors(ex, tenant, causer.runId) : [];
    return snapshotOf({
      prior: prior ? (prior.decision as unknown as Admitted) : null,
      tenant: t,
      global: g,
      causer,
      ancestors,
      path,
      sliceTaken: slice !== undefined,
      agentDisabled: agent !== undefined && !agent.enabled,
      ends,
    });
  }

  /**
   * The create path's statement (commit-batch.ts) for what it carries — a task on its tenant's root path —
   * else, or when it answers 'raced', the one-by-one commit (commit.ts, behind the causal-tree re-check of
   * causal-tree.ts), which tells duplicate / run_exists / raced apart: what the create combiner does.
   */
  async commitAdmission(plan: AdmissionPlan): Promise<CommitResult> {
    if (isBatchable(plan)) {
      const r = await atomically(this.exec, async (tx) => {
        const out = await commitBatch(tx, [[plan]], [], 'q');
        return out === 'raced' ? abort<'raced'>('raced') : 'committed';
      });
      if (r === 'committed') return { status: 'committed', decision: plan.decision };
    }
    return atomically(this.exec, (tx) => commitCaused(tx, plan));
  }

  async claim(capacity: number, now: number): Promise<Dispatch[]> {
    return claimQueued(this.exec, capacity, now);
  }

  settle(s: Settlement): Promise<SettleResult> {
    return atomically(this.exec, (tx) => settleOne(tx, s));
  }

  async getRun(tenant: string, runId: string): Promise<RunSlot | null> {
    const r = await this.exec
      .selectFrom('adm_slots')
      .selectAll()
      .where('tenant', '=', tenant)
      .where('run_id', '=', runId)
      .executeTakeFirst();
    return r ? slotOf(r) : null;
  }

  async getEnvelope(tenant: string, envelopeId: string): Promise<Envelope | null> {
    const r = await this.exec
      .selectFrom('adm_envelopes_now')
      .selectAll()
      .where('tenant', '=', tenant)
      .where('id', '=', envelopeId)
      .executeTakeFirst();
    return r ? envelopeOf(r) : null;
  }

  async causalSubtree(tenant: string, runId: string): Promise<CausalNode[]> {
    const { rows } = await sql<{
      run_id: string;
      caused_by_run_id: string | null;
      status: string;
      cause: string;
      kind: string;
    }>`
      WITH RECURSIVE tree(run_id) AS (
        SELECT run_id FROM adm_slots WHERE tenant = ${tenant} AND run_id = ${runId}
        UNION
        SELECT s.run_id FROM adm_slots s JOIN tree ON s.tenant = ${tenant} AND s.caused_by_run_id = tree.run_id
      )
      SELECT s.run_id, s.caused_by_run_id, s.status, s.cause, s.kind
      FROM tree JOIN adm_slots s ON s.tenant = ${tenant} AND s.run_id = tree.run_id`.execute(this.exec);
    return rows.map((r) => ({
      runId: r.run_id,
      causedByRunId: r.caused_by_run_id,
      status: r.status as RunStatus,
      cause: r.cause as RunCause,
      kind: r.kind,
    }));
  }
}

/** Envelopes from `id` up to the tenant root (drawn-from first). */
export async function envelopePath(ex: Executor, tenant: string, id: string): Promise<Envelope[]> {
  const { rows } = await sql<{ id: string }>`
    WITH RECURSIVE p(id, parent_id, depth) AS (
      SELECT id, parent_id, 0 FROM adm_envelopes WHERE tenant = ${tenant} AND id = ${id}
      UNION ALL
      SELECT e.id, e.parent_id, p.depth + 1 FROM adm_envelopes e JOIN p ON e.tenant = ${tenant} AND e.id = p.parent_id
      WHERE p.depth < 64
    )
    SELECT id FROM p ORDER BY depth`.execute(ex);
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const envs = await ex
    .selectFrom('adm_envelopes_now')
    .selectAll()
    .where('tenant', '=', tenant)
    .where('id', 'in', ids)
    .execute();
  const byId = new Map(envs.map((e) => [e.id, envelopeOf(e)]));
  return ids.map((i) => byId.get(i)).filter((e): e is Envelope => e !== undefined);
}
