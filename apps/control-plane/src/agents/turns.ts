// What the control plane knows of a turn beyond its run row: its opening message, its park, the calls it
// dispatched and the results that arrived for them. A run call is resolved when its caused run is terminal
// (derived from the ledger, never a second copy), an experiment call when every run of its group is; an
// approval when a person answered (POST /runs/:id/input). And the holders that declined to resume it.
import { RunStatus, rollupStatus } from '@everdict/run-model';
import { sql } from 'kysely';
import { numeric } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { readRecord } from '../ledger/records.js';
import type { RunRow } from '../ledger/runs.js';
import { leaseAgentOf } from './registry.js';
import type { PendingCall, Resolution, TurnLeaseView } from './schemas.js';

const TERMINAL = ['succeeded', 'failed', 'cancelled'] as const;
type Terminal = (typeof TERMINAL)[number];
type SettledRollup = Extract<Resolution, { kind: 'experiment' }>['status'];
const isTerminal = (s: string | null): s is Terminal => TERMINAL.includes(s as Terminal);

/**
 * SQL: the turn `r` has a dispatched call still waiting (an unanswered approval, a caused run not settled, an
 * experiment group with a run not settled). A parked turn is ready only when NONE waits: it resumes once,
 * with every result.
 */
export const WAITING_CALL = sql`EXISTS (
  SELECT 1 FROM agent_calls c LEFT JOIN runs cr ON cr.id = c.caused_run_id
  WHERE c.turn_id = r.id AND (
    (c.caused_run_id IS NULL AND c.caused_group_id IS NULL AND c.resolved_at IS NULL)
    OR (c.caused_run_id IS NOT NULL AND cr.status NOT IN ('succeeded', 'failed', 'cancelled'))
    OR (c.caused_group_id IS NOT NULL AND EXISTS (
      SELECT 1 FROM runs gr WHERE gr.tenant_id = c.tenant_id AND gr.group_id = c.caused_group_id
        AND gr.status NOT IN ('succeeded', 'failed', 'cancelled')))))`;

interface CallRow {
  call_id: string;
  tool: string;
  caused_run_id: string | null;
  caused_group_id: string | null;
  question: string | null;
  resolution: unknown;
  created_at: Date | string;
  status: string | null;
  outputs: unknown;
}

/** The turn's calls in dispatch order, each with its caused run's status (if any). */
async function callsOf(ex: Executor, turnId: string): Promise<CallRow[]> {
  return ex
    .selectFrom('agent_calls as c')
    .leftJoin('runs as cr', 'cr.id', 'c.caused_run_id')
    .select([
      'c.call_id',
      'c.tool',
      'c.caused_run_id',
      'c.caused_group_id',
      'c.question',
      'c.resolution',
      'c.created_at',
      'cr.status',
      'cr.outputs',
    ])
    .where('c.turn_id', '=', turnId)
    .orderBy('c.created_at')
    .orderBy('c.call_id')
    .execute();
}

/** The runs of each experiment group the calls caused (id order), by group id. */
async function groupRunsOf(
  ex: Executor,
  tenant: string,
  calls: readonly CallRow[],
): Promise<Map<string, { id: string; status: string }[]>> {
  const ids = calls.flatMap((c) => (c.caused_group_id ? [c.caused_group_id] : []));
  const out = new Map<string, { id: string; status: string }[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return out;
  const rows = await ex
    .selectFrom('runs')
    .select(['id', 'status', 'group_id'])
    .where('tenant_id', '=', tenant)
    .where('group_id', 'in', ids)
    .orderBy('id')
    .execute();
  for (const r of rows) out.get(r.group_id ?? '')?.push({ id: r.id, status: r.status });
  return out;
}

const tenantOfTurn = async (ex: Executor, turnId: string) =>
  (await ex.selectFrom('runs').select('tenant_id').where('id', '=', turnId).executeTakeFirst())?.tenant_id ??
  '';

/** The results that arrived for the turn's calls, in dispatch order. */
export async function resolutionsOf(ex: Executor, turnId: string): Promise<Resolution[]> {
  const rows = await callsOf(ex, turnId);
  const groups = await groupRunsOf(ex, await tenantOfTurn(ex, turnId), rows);
  const out: Resolution[] = [];
  for (const r of rows) {
    if (r.caused_group_id) {
      const runs = groups.get(r.caused_group_id) ?? [];
      if (runs.length > 0 && runs.every((g) => isTerminal(g.status)))
        out.push({
          kind: 'experiment',
          callId: r.call_id,
          groupId: r.caused_group_id,
          status: rollupStatus(runs.map((g) => RunStatus.parse(g.status))) as SettledRollup,
          runs: runs.map((g) => ({ runId: g.id, status: g.status as Terminal })),
        });
    } else if (r.caused_run_id) {
      if (isTerminal(r.status))
        out.push({
          kind: 'run',
          callId: r.call_id,
          runId: r.caused_run_id,
          status: r.status,
          ...(r.outputs ? { outputs: r.outputs } : {}),
        });
    } else if (r.resolution) {
      const a = r.resolution as { approved: boolean; note?: string; by?: string };
      out.push({
        kind: 'approval',
        callId: r.call_id,
        approved: a.approved,
        ...(a.note !== undefined ? { note: a.note } : {}),
        ...(a.by !== undefined ? { by: a.by } : {}),
      });
    }
  }
  return out;
}

/** The turn's calls still waiting, in dispatch order: what a person sees before answering. */
export async function pendingOf(ex: Executor, tenant: string, turnId: string): Promise<PendingCall[]> {
  const rows = await callsOf(ex, turnId);
  const groups = await groupRunsOf(ex, tenant, rows);
  const out: PendingCall[] = [];
  for (const r of rows) {
    const base = { callId: r.call_id, tool: r.tool, since: new Date(r.created_at).toISOString() };
    if (r.caused_group_id) {
      const open = (groups.get(r.caused_group_id) ?? []).filter((g) => !isTerminal(g.status));
      if (open.length > 0)
        out.push({
          ...base,
          kind: 'experiment',
          groupId: r.caused_group_id,
          waitingOn: open.map((g) => g.id),
        });
    } else if (r.caused_run_id) {
      if (!isTerminal(r.status)) out.push({ ...base, kind: 'run', runId: r.caused_run_id });
    } else if (!r.resolution) {
      out.push({ ...base, kind: 'approval', ...(r.question !== null ? { prompt: r.question } : {}) });
    }
  }
  return out;
}

/** A holder's decline of the turn's resume (agents/declines.ts): who, why, when. */
export interface TurnDecline {
  holder: string;
  reason: 'manifest_mismatch' | 'snapshot_mismatch';
  at: string;
}

/** The holders that declined to resume the turn, oldest first: it is offered to none of them again. */
export async function declinesOf(ex: Executor, turnId: string): Promise<TurnDecline[]> {
  const rows = await ex
    .selectFrom('agent_turn_declines')
    .select(['holder', 'reason', 'declined_at'])
    .where('run_id', '=', turnId)
    .orderBy('declined_at')
    .orderBy('holder')
    .execute();
  return rows.map((r) => ({ holder: r.holder, reason: r.reason, at: new Date(r.declined_at).toISOString() }));
}

/** The lease a holder gets on `row` at `epoch`: the agent version it runs, its record, its inputs. */
export async function turnLeaseOf(
  ex: Executor,
  row: RunRow,
  epoch: number,
  terms: { leaseMs: number; heartbeatMs: number },
): Promise<TurnLeaseView> {
  const subject = row.subject as { agentId?: string; agentVersion?: string };
  if (!subject.agentId) throw new ControlPlaneError('conflict', `run ${row.id} names no agent`);
  const turn = await ex.selectFrom('agent_turns').selectAll().where('run_id', '=', row.id).executeTakeFirst();
  const version = Number(subject.agentVersion);
  if (!Number.isInteger(version))
    throw notFound('agent version', `${subject.agentId}@${subject.agentVersion}`);
  const agent = await leaseAgentOf(ex, row.tenant_id, subject.agentId, version);
  const { wire } = await readRecord(ex, row);
  const origin = row.origin as { cause?: string; eventKind?: string; eventId?: string };
  const text =
    turn?.input_text ??
    (origin.cause === 'event' || origin.cause === 'schedule'
      ? `Activated by ${origin.cause} ${origin.eventKind ?? ''} ${origin.eventId ?? ''}`
          .replace(/\s+/g, ' ')
          .trim()
      : undefined);
  return {
    runId: row.id,
    tenant: row.tenant_id,
    epoch,
    leaseMs: terms.leaseMs,
    heartbeatMs: terms.heartbeatMs,
    unitId: row.unit_id,
    grantsId: row.grants_id,
    agent,
    record: row.record_length > 0 ? wire : null,
    recordHead: row.status === 'running' ? (row.interval_head ?? row.record_head) : row.record_head,
    ...(row.status === 'awaiting_input' && turn?.parked_at_ms != null
      ? { parkedAtMs: numeric(turn.parked_at_ms) }
      : {}),
    ...(row.record_length === 0 && text !== undefined ? { input: { text } } : {}),
    resolutions: await resolutionsOf(ex, row.id),
  };
}
