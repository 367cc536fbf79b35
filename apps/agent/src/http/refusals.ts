// The control plane's refusals as the agent's one error, by their problem code: 402 envelope_exhausted, 429
// capacity_refused, 409 stale_lease / state_conflict / agent_disabled / record_refused (snapshot_mismatch →
// SnapshotMismatch, manifest_mismatch → ManifestMismatch), 422 no_placement → tool_unavailable, 404 not_found,
// 400 bad_request, no answer / 5xx → control_plane_unavailable. Used by every call over HTTP (the port and the
// host's pairing).
import { isClientError } from '@everdict/client';
import { AgentError, type AgentErrorCode } from '../errors.js';

const RECORD_CODES: Record<string, string> = {
  snapshot_mismatch: 'SnapshotMismatch',
  manifest_mismatch: 'ManifestMismatch',
};

/** A client refusal as the agent's one error (anything else passes through unchanged). */
export function toAgentError(e: unknown): unknown {
  if (!isClientError(e)) return e;
  const rule = typeof e.problem?.rule === 'string' ? e.problem.rule : undefined;
  const detail = { status: e.status, problem: e.code, ...(rule ? { rule } : {}) };
  const as = (code: AgentErrorCode, extra: Record<string, unknown> = {}) =>
    new AgentError(code, e.message, { ...detail, ...extra });
  if (e.code in RECORD_CODES) return as('record_refused', { recordCode: RECORD_CODES[e.code] });
  switch (e.code) {
    case 'stale_lease':
      return as('stale_lease');
    case 'attestation_mismatch':
      return as('attestation_refused');
    case 'invalid_pairing_token':
    case 'invalid_agent_host': // this host was revoked (or the control plane requires a paired one)
      return as('not_paired');
    case 'envelope_exhausted':
      return as('envelope_exhausted');
    case 'capacity_exceeded':
      return as('capacity_refused');
    case 'no_placement':
      return as('tool_unavailable');
    case 'not_found':
      return as('not_found');
    case 'conflict':
      return as(rule === 'agent_disabled' ? 'agent_disabled' : 'state_conflict');
  }
  if (e.status === 0 || e.status >= 500) return as('control_plane_unavailable');
  if (e.status === 409) return as('state_conflict');
  return as('bad_request');
}

/** `f`, its client refusals thrown as AgentErrors. */
export async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw toAgentError(e);
  }
}
