// The local seat's lease rules, as the runner protocol states them: an expired lease requeues its turn, a
// grant bumps the epoch, a heartbeat extends only leases still held under the same holder and epoch.
import type { LeaseRef, TurnLease } from '../control-plane.js';
import { AgentError } from '../errors.js';
import type { Ledger, TurnRow } from './ledger-file.js';

export interface LeaseTerms {
  readonly now: number;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
}

/** Requeue expired turns, then grant up to `free` queued turns to `holder` (mutates the ledger). */
export function grantLeases(
  l: Ledger,
  request: { free: number; holder: string },
  terms: LeaseTerms,
): TurnLease[] {
  const { now, leaseMs, heartbeatMs } = terms;
  const out: TurnLease[] = [];
  for (const t of Object.values(l.turns)) {
    if (t.status === 'running' && (t.leaseExpiresAt ?? 0) <= now) {
      t.status = 'queued';
      delete t.holder;
    }
  }
  for (const t of Object.values(l.turns)) {
    if (out.length >= request.free) break;
    if (t.status !== 'queued') continue;
    const agent = l.agents[t.agentId]?.spec;
    if (!agent) continue;
    t.status = 'running';
    t.epoch += 1;
    t.holder = request.holder;
    t.leaseExpiresAt = now + leaseMs;
    out.push({
      runId: t.runId,
      tenant: t.tenant,
      epoch: t.epoch,
      leaseMs,
      heartbeatMs,
      unitId: t.unitId,
      grantsId: t.grantsId,
      agent,
      record: t.record,
      ...(t.parkedAtMs !== undefined ? { parkedAtMs: t.parkedAtMs } : {}),
      ...(t.record === null && t.input ? { input: t.input } : {}),
      resolutions: t.resolutions.filter((r) => t.outstanding.includes(r.callId)),
    });
  }
  return out;
}

/** Extend the leases `holder` still holds until `expiresAt`; the others are lost (mutates the ledger). */
export function renewLeases(
  l: Ledger,
  holder: string,
  leases: readonly LeaseRef[],
  expiresAt: number,
): { lost: string[] } {
  const lost: string[] = [];
  for (const ref of leases) {
    const t = l.turns[ref.runId];
    if (t?.status !== 'running' || t.holder !== holder || t.epoch !== ref.epoch) lost.push(ref.runId);
    else t.leaseExpiresAt = expiresAt;
  }
  return { lost };
}

/** The turn `ref` names, while its lease is still held at that epoch; else `not_found` / `stale_lease`. */
export function heldTurn(l: Ledger, ref: LeaseRef): TurnRow {
  const t = l.turns[ref.runId];
  if (!t) throw new AgentError('not_found', `run ${ref.runId} not found`);
  if (t.status !== 'running' || t.epoch !== ref.epoch)
    throw new AgentError('stale_lease', `the lease on ${ref.runId} at epoch ${ref.epoch} is gone`, {
      epoch: t.epoch,
      status: t.status,
    });
  return t;
}

/** A parked turn whose every outstanding call has its result goes back to the queue. */
export function readyIfResolved(t: TurnRow): void {
  if (t.status !== 'awaiting_input') return;
  if (t.outstanding.every((id) => t.resolutions.some((r) => r.callId === id))) t.status = 'queued';
}
