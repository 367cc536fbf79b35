// The admitted verdict: the decision the gate answers and the plan a store commits — the new run's
// slot, the envelope path to draw on and the guards the commit must re-check.
import type { Admitted } from './decision.js';
import type { Actuals, Envelope } from './envelope.js';
import type { AdmissionRequest } from './request.js';
import type { AdmissionPlan, AdmissionSnapshot, TenantLoad } from './store.js';

function aheadOf(load: TenantLoad, runClass: Admitted['class']): number {
  const q = load.queuedByClass;
  return runClass === 'interactive'
    ? q.interactive
    : runClass === 'background'
      ? q.interactive + q.background
      : load.queued;
}

export function admitted(
  snap: AdmissionSnapshot,
  request: AdmissionRequest,
  now: number,
  d: {
    runClass: Admitted['class'];
    depth: number;
    slice: Envelope | null;
    member: boolean;
    pools: AdmissionPlan['guards']['sessionPools'];
    estimate: Actuals;
  },
): { readonly decision: Admitted; readonly plan: AdmissionPlan } {
  const session = request.lifetime === 'session';
  const envelopeId = d.slice ? d.slice.id : snap.path[0]!.id;
  const decision: Admitted = {
    outcome: 'admitted',
    requestId: request.requestId,
    runId: request.runId,
    tenant: request.tenant,
    class: d.runClass,
    lane: session ? 'session' : 'queue',
    envelopeId,
    depth: d.depth,
    position: session
      ? null
      : { tenantAhead: aheadOf(snap.load, d.runClass), tenantQueued: snap.load.queued },
    admittedAt: now,
  };
  const plan: AdmissionPlan = {
    decision,
    slot: {
      runId: request.runId,
      tenant: request.tenant,
      kind: request.kind,
      cause: request.cause,
      class: d.runClass,
      lifetime: request.lifetime,
      status: session ? 'running' : 'queued',
      causedByRunId: request.causedByRunId ?? null,
      depth: d.depth,
      children: 0,
      envelopeId,
      member: d.member,
      agentId: request.agentId ?? null,
      expectedDurationMs: request.expectedDurationMs ?? null,
      admittedAt: now,
      startedAt: session ? now : null,
    },
    pathIds: snap.path.map((e) => e.id),
    slice: d.slice,
    guards: {
      estimate: d.estimate,
      maxQueued: session ? null : snap.policy!.maxQueued,
      sessionPools: d.pools,
      maxChildren: snap.causer ? snap.policy!.maxChildrenPerRun : null,
    },
  };
  return { decision, plan };
}
