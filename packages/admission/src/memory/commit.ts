// The in-memory store's commit: re-check every guard against the current state, then record the admission,
// count it on its envelope path and the causer, and enqueue it (the role `commit.ts` has in every store's folder).
import { cascadeOptOut, revokedBy } from '../cascade.js';
import { admittedEnvelope } from '../envelope.js';
import { adjust, sessionBlock } from '../session-pool.js';
import type { AdmissionPlan, CommitResult } from '../store.js';
import type { MemoryState } from './state.js';
import { blocks, type EnvNode, pathBlocks } from './tenant.js';

const RACED: CommitResult = { status: 'raced' };
const RUN_EXISTS: CommitResult = { status: 'run_exists' };
const SLICE_EXISTS: CommitResult = { status: 'slice_exists' };

export function commitAdmission(m: MemoryState, plan: AdmissionPlan): CommitResult {
  const { decision, slot, guards } = plan;
  const t = m.tenants.get(slot.tenant);
  if (!t) return RACED;
  const table = m.table;
  const ids = m.ids;
  const existing = ids.get(t.no, slot.runId); // one lookup for both checks when the ids are equal
  const own = decision.requestId === slot.runId ? existing : ids.get(t.no, decision.requestId);
  const prior = t.prior(table, decision.requestId, own);
  if (prior >= 0) return { status: 'duplicate', decision: table.decision(prior, decision.requestId) };
  if (existing >= 0) return RUN_EXISTS;
  if (plan.slice && t.envelopes.has(plan.slice.id)) return SLICE_EXISTS;
  const path = m.path;
  path.length = 0;
  for (const id of plan.pathIds) {
    const node = t.envelopes.get(id);
    if (!node) return RACED;
    path.push(node);
  }
  const causer = slot.causedByRunId === null ? -1 : ids.get(t.no, slot.causedByRunId);
  const pools = guards.sessionPools;
  const raced =
    (plan.slice !== null && blocks(plan.slice, guards.estimate)) ||
    pathBlocks(path, guards.estimate) ||
    (guards.maxQueued !== null && t.queued >= guards.maxQueued) ||
    (pools !== null &&
      sessionBlock(
        { load: t.sessions, caps: pools.tenant },
        { load: m.globalSessions, caps: pools.global },
        slot.member,
      ) !== null) ||
    (slot.causedByRunId !== null &&
      (causer < 0 ||
        (guards.maxChildren !== null && table.children[causer]! >= guards.maxChildren) ||
        revokedBy(table.slot(causer), table.ancestors(causer), slot, cascadeOptOut(t.policy.cascade)) !==
          null));
  if (raced) return RACED;

  for (const node of path) node.env = admittedEnvelope(node.env);
  let drawn: EnvNode | null = path[0] ?? null;
  if (plan.slice) {
    const parentId = plan.slice.parentId;
    const parent = parentId === null ? null : (t.envelopes.get(parentId) ?? null);
    drawn = { env: admittedEnvelope(plan.slice), parent };
    t.envelopes.set(plan.slice.id, drawn);
  }
  if (drawn?.env.id !== slot.envelopeId) drawn = t.envelopes.get(slot.envelopeId) ?? null;
  const r = table.add(plan, { tenant: t.no, tenantId: t.id, env: drawn, causer });
  ids.add(t.no, slot.runId, r);
  if (decision.requestId !== slot.runId) t.decisions.set(decision.requestId, r);
  if (causer >= 0) {
    table.children[causer]!++;
    const siblings = t.children.get(causer);
    if (siblings) siblings.push(r);
    else t.children.set(causer, [r]);
  }
  if (slot.lifetime === 'session') {
    t.sessions = adjust(t.sessions, slot.member, 1);
    m.globalSessions = adjust(m.globalSessions, slot.member, 1);
    if (slot.expectedDurationMs !== null) t.sessionEnds.set(r, slot.admittedAt + slot.expectedDurationMs, 0);
  } else {
    t.countQueued(slot.class, 1);
    m.queue.enqueue(t.queue, r);
  }
  return { status: 'committed', decision };
}
