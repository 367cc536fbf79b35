// The causal tree as admission's SQL twin reads it: a causer's ancestors (for the snapshot `decide` reads),
// and the commit's re-check of the gate's `causer_cancelled` rule under lock — admission's `revokedBy`, the
// one rule, applied to the rows as they are at commit. The causer's slot is locked FOR NO KEY UPDATE (the
// commit bumps its `children` right after; a sibling's create waits here rather than deadlocking on an
// upgrade) and its ancestors' FOR SHARE: a cancel settles a slot with an UPDATE, so it waits for this
// create's commit — then the cascade, which reads the tree after the cancel commits, sees the new run — or
// this create waits for the cancel and reads it cancelled here, answers `raced`, and the gate, deciding
// again, refuses. No window in between: a child is either refused or in the tree the cascade walks.
import {
  type AdmissionPlan,
  type CausalNode,
  type CommitResult,
  cascadeOptOut,
  revokedBy,
  type TenantPolicyInput,
  tenantPolicy,
} from '@everdict/admission';
import type { RunCause, RunStatus } from '@everdict/run-model';
import { sql } from 'kysely';
import type { Executor, Tx } from '../../db/tx.js';
import { commitPlan } from './commit.js';
import { abort } from './scope.js';

/** Past any causal depth a policy allows: the walk's bound should a row ever point in a circle. */
const MAX_WALK = 4096;

interface NodeRow {
  run_id: string;
  caused_by_run_id: string | null;
  status: string;
  cause: string;
  kind: string;
}

const nodeOf = (r: NodeRow): CausalNode => ({
  runId: r.run_id,
  causedByRunId: r.caused_by_run_id,
  status: r.status as RunStatus,
  cause: r.cause as RunCause,
  kind: r.kind,
});

/**
 * The ancestors of `runId` (not itself): its causer first, up to its tree's root. One statement; with
 * `lock`, their slots are locked FOR SHARE in run id order (the control plane's order for slots) as read.
 */
export async function causalAncestors(
  ex: Executor,
  tenant: string,
  runId: string,
  lock = false,
): Promise<CausalNode[]> {
  const { rows } = await sql<NodeRow & { n: number }>`
    WITH RECURSIVE up(run_id, n) AS (
      SELECT s.caused_by_run_id, 0 FROM adm_slots s
      WHERE s.tenant = ${tenant} AND s.run_id = ${runId} AND s.caused_by_run_id IS NOT NULL
      UNION ALL
      SELECT s.caused_by_run_id, up.n + 1 FROM adm_slots s JOIN up ON s.tenant = ${tenant} AND s.run_id = up.run_id
      WHERE s.caused_by_run_id IS NOT NULL AND up.n < ${MAX_WALK}
    )
    SELECT s.run_id, s.caused_by_run_id, s.status, s.cause, s.kind, up.n
    FROM up JOIN adm_slots s ON s.tenant = ${tenant} AND s.run_id = up.run_id
    ${lock ? sql`ORDER BY s.run_id FOR SHARE OF s` : sql`ORDER BY up.n`}`.execute(ex);
  return (lock ? [...rows].sort((a, b) => a.n - b.n) : rows).map(nodeOf);
}

/**
 * Lock the plan's causal chain and answer whether the gate's `causer_cancelled` rule now refuses it (the
 * cancelled run's id), or null. For a plan without a causer: null, nothing locked.
 */
export async function revokedAtCommit(tx: Tx, plan: AdmissionPlan): Promise<string | null> {
  const { slot } = plan;
  const causerId = slot.causedByRunId;
  if (causerId === null) return null;
  const tenant = slot.tenant;
  const { rows: mine } = await sql<NodeRow>`
    SELECT run_id, caused_by_run_id, status, cause, kind FROM adm_slots
    WHERE tenant = ${tenant} AND run_id = ${causerId} FOR NO KEY UPDATE`.execute(tx);
  const causer = mine[0];
  if (!causer) return null; // no causer any more: the commit's own guard answers `raced`
  // The chain never changes (a slot's causer is written once): walked and locked in one statement, its
  // statuses read under the lock.
  const ancestors = await causalAncestors(tx, tenant, causerId, true);
  const chain = [nodeOf(causer), ...ancestors];
  if (!chain.some((n) => n.status === 'cancelled')) return null; // the common case: no policy read
  const t = await tx
    .selectFrom('adm_tenants')
    .select('policy')
    .where('tenant', '=', tenant)
    .executeTakeFirst();
  const optOut = cascadeOptOut(tenantPolicy((t?.policy ?? {}) as TenantPolicyInput).cascade);
  return revokedBy(nodeOf(causer), ancestors, slot, optOut);
}

/**
 * `commitPlan` (commit.ts) behind the causal-tree re-check: a plan whose causer's tree was cancelled since
 * its snapshot answers `raced` (rolled back: nothing written), so the caller decides again and is refused.
 */
export async function commitCaused(tx: Tx, plan: AdmissionPlan): Promise<CommitResult> {
  if ((await revokedAtCommit(tx, plan)) !== null) return abort<CommitResult>({ status: 'raced' });
  return commitPlan(tx, plan);
}
