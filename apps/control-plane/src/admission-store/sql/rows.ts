// Row ↔ domain mapping for the admission tables.
import type { Envelope, RunSlot } from '@everdict/admission';
import type { RunCause, RunClass, RunLifetime, RunStatus } from '@everdict/run-model';
import type { Selectable } from 'kysely';
import { numeric } from '../../db/numeric.js';
import type { AdmEnvelopesTable, AdmSlotsTable } from '../../db/schema-admission.js';

export const QUEUED_COLUMN = {
  interactive: 'queued_interactive',
  background: 'queued_background',
  batch: 'queued_batch',
} as const satisfies Record<RunClass, string>;

export function slotOf(r: Selectable<AdmSlotsTable>): RunSlot {
  return {
    runId: r.run_id,
    tenant: r.tenant,
    kind: r.kind,
    cause: r.cause as RunCause,
    class: r.class as RunClass,
    lifetime: r.lifetime as RunLifetime,
    status: r.status as RunStatus,
    causedByRunId: r.caused_by_run_id,
    depth: r.depth,
    children: r.children,
    envelopeId: r.envelope_id,
    member: r.member,
    agentId: r.agent_id,
    expectedDurationMs: r.expected_duration_ms === null ? null : numeric(r.expected_duration_ms),
    admittedAt: numeric(r.admitted_at),
    startedAt: r.started_at === null ? null : numeric(r.started_at),
  };
}

export function slotRow(s: RunSlot) {
  return {
    run_id: s.runId,
    tenant: s.tenant,
    kind: s.kind,
    cause: s.cause,
    class: s.class,
    lifetime: s.lifetime,
    status: s.status,
    caused_by_run_id: s.causedByRunId,
    depth: s.depth,
    children: s.children,
    envelope_id: s.envelopeId,
    member: s.member,
    agent_id: s.agentId,
    expected_duration_ms: s.expectedDurationMs,
    admitted_at: s.admittedAt,
    started_at: s.startedAt,
  };
}

export function envelopeOf(r: Selectable<AdmEnvelopesTable>): Envelope {
  const caps: { usd?: number; tokens?: number; runs?: number } = {};
  if (r.cap_usd !== null) caps.usd = r.cap_usd;
  if (r.cap_tokens !== null) caps.tokens = r.cap_tokens;
  if (r.cap_runs !== null) caps.runs = r.cap_runs;
  return {
    id: r.id,
    parentId: r.parent_id,
    tenant: r.tenant,
    caps,
    spent: { usd: r.spent_usd, tokens: r.spent_tokens, runs: r.spent_runs },
    inFlight: r.in_flight,
    inFlightCap: r.in_flight_cap,
  };
}

export function envelopeRow(e: Envelope) {
  return {
    id: e.id,
    tenant: e.tenant,
    parent_id: e.parentId,
    cap_usd: e.caps.usd ?? null,
    cap_tokens: e.caps.tokens ?? null,
    cap_runs: e.caps.runs ?? null,
    spent_usd: e.spent.usd,
    spent_tokens: e.spent.tokens,
    spent_runs: e.spent.runs,
    in_flight: e.inFlight,
    in_flight_cap: e.inFlightCap,
  };
}

/**
 * The request id of a create that gave none: its own fresh run id, so no later request can ever repeat it. Its
 * admission record (`adm_admissions`, the idempotency key's first decision) would never be read: it is not
 * written (migration 0022's notes; ≈ 0.6 kB of WAL per run).
 */
export const autoRequestId = (runId: string): string => `auto:${runId}`;

/** Whether a plan's decision is recorded for idempotency (a caller's request id, not an auto one). */
export const isRecordedRequest = (plan: {
  decision: { requestId: string };
  slot: { runId: string };
}): boolean => plan.decision.requestId !== autoRequestId(plan.slot.runId);
