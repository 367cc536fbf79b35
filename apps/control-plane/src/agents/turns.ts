// What the control plane knows of a turn beyond its run row: its opening message, its park, the calls it
// dispatched and the results that arrived for them. A run call is resolved when its caused run is terminal
// (derived from the ledger, never a second copy); an approval when a person answered (POST /runs/:id/input).
import { sql } from 'kysely';
import { numeric } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { readRecord } from '../ledger/records.js';
import type { RunRow } from '../ledger/runs.js';
import { leaseAgentOf } from './registry.js';
import type { Resolution, TurnLeaseView } from './schemas.js';

const TERMINAL = ['succeeded', 'failed', 'cancelled'] as const;
type Terminal = (typeof TERMINAL)[number];
const isTerminal = (s: string | null): s is Terminal => TERMINAL.includes(s as Terminal);

/** SQL: the turn `r` has a dispatched call still waiting (an unanswered approval, a caused run not settled). */
export const WAITING_CALL = sql`EXISTS (
  SELECT 1 FROM agent_calls c LEFT JOIN runs cr ON cr.id = c.caused_run_id
  WHERE c.turn_id = r.id AND (
    (c.caused_run_id IS NULL AND c.resolved_at IS NULL)
    OR (c.caused_run_id IS NOT NULL AND cr.status NOT IN ('succeeded', 'failed', 'cancelled'))))`;

/** The results that arrived for the turn's calls, in dispatch order. */
export async function resolutionsOf(ex: Executor, turnId: string): Promise<Resolution[]> {
  const rows = await ex
    .selectFrom('agent_calls as c')
    .leftJoin('runs as cr', 'cr.id', 'c.caused_run_id')
    .select(['c.call_id', 'c.caused_run_id', 'c.resolution', 'cr.status', 'cr.outputs'])
    .where('c.turn_id', '=', turnId)
    .orderBy('c.created_at')
    .orderBy('c.call_id')
    .execute();
  const out: Resolution[] = [];
  for (const r of rows) {
    if (r.caused_run_id) {
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
    ...(row.status === 'awaiting_input' && turn?.parked_at_ms != null
      ? { parkedAtMs: numeric(turn.parked_at_ms) }
      : {}),
    ...(row.record_length === 0 && text !== undefined ? { input: { text } } : {}),
    resolutions: await resolutionsOf(ex, row.id),
  };
}
