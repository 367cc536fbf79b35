// RunGroup — "these runs are one thing" — and the rule that rolls member statuses up to the group.
import { z } from 'zod';
import { RunModelError } from './errors.js';
import { Id, JsonObject, Timestamp } from './primitives.js';
import type { Run } from './run.js';
import { Aggregate, type Scoring } from './scoring.js';
import { RUN_STATUSES, RunGroupKind, type RunStatus } from './vocabulary.js';

/** A run status, or `partial`: every member settled, some succeeded and some did not. */
export const GroupStatus = z.enum([...RUN_STATUSES, 'partial']);
export type GroupStatus = z.infer<typeof GroupStatus>;
export const TERMINAL_GROUP_STATUSES = ['succeeded', 'failed', 'cancelled', 'partial'] as const;

export function isTerminalGroupStatus(status: GroupStatus): boolean {
  return (TERMINAL_GROUP_STATUSES as readonly GroupStatus[]).includes(status);
}

/** The latest scoring applied to the group (phase 2): its id, lineage and aggregate. */
export const GroupScoring = z.strictObject({
  scoringId: Id,
  rescoreOf: Id.optional(),
  aggregate: Aggregate,
  scoredAt: Timestamp,
});
export type GroupScoring = z.infer<typeof GroupScoring>;

export const RunGroup = z
  .strictObject({
    id: Id,
    tenant: Id,
    kind: RunGroupKind,
    label: z.string().max(500),
    /** What the fan-out was asked to do (harness + dataset, conversation settings, …): any JSON object. */
    spec: JsonObject,
    runIds: z.array(Id),
    status: GroupStatus,
    scoring: GroupScoring.optional(),
    createdBy: Id,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .superRefine((g, ctx) => {
    if (new Set(g.runIds).size !== g.runIds.length) {
      ctx.addIssue({ code: 'custom', path: ['runIds'], message: 'a run belongs to a group once' });
    }
    if (g.kind === 'experiment' && g.scoring) {
      ctx.addIssue({
        code: 'custom',
        path: ['scoring'],
        message: 'an experiment has no scoring (it is phase 1 only)',
      });
    }
  });
export type RunGroup = z.infer<typeof RunGroup>;

export type StatusCounts = Record<RunStatus, number>;

export function countStatuses(statuses: Iterable<RunStatus>): StatusCounts {
  const counts: StatusCounts = {
    queued: 0,
    running: 0,
    awaiting_input: 0,
    succeeded: 0,
    failed: 0,
    cancelled: 0,
  };
  for (const s of statuses) counts[s] += 1;
  return counts;
}

/**
 * The rollup rule, from member statuses (order never matters):
 *   no members                      → queued      (nothing has started)
 *   some member not terminal:
 *     any awaiting_input            → awaiting_input  (a person is needed: most actionable)
 *     else any running or settled   → running     (work is under way)
 *     else (all queued)             → queued
 *   every member terminal:
 *     all succeeded / failed / cancelled → that status
 *     some succeeded, some not      → partial
 *     failed and cancelled only     → failed
 * Hence: a non-empty group is terminal exactly when all its members are.
 */
export function rollupStatus(statuses: Iterable<RunStatus>): GroupStatus {
  const c = countStatuses(statuses);
  const total = Object.values(c).reduce((a, b) => a + b, 0);
  const settled = c.succeeded + c.failed + c.cancelled;
  if (total === 0) return 'queued';
  if (settled < total) {
    if (c.awaiting_input > 0) return 'awaiting_input';
    return c.running > 0 || settled > 0 ? 'running' : 'queued';
  }
  if (c.succeeded === total) return 'succeeded';
  if (c.failed === total) return 'failed';
  if (c.cancelled === total) return 'cancelled';
  return c.succeeded > 0 ? 'partial' : 'failed';
}

/** The group with its status rolled up from its members; `members` must cover every runId. */
export function rollupGroup(
  group: RunGroup,
  members: readonly Pick<Run, 'id' | 'status'>[],
  now: string,
): RunGroup {
  const byId = new Map(members.map((m) => [m.id, m.status]));
  const statuses = group.runIds.map((id) => {
    const s = byId.get(id);
    if (s === undefined) throw new RunModelError('invalid_input', `member run ${id} missing`, { runId: id });
    return s;
  });
  const status = rollupStatus(statuses);
  return status === group.status ? { ...group } : { ...group, status, updatedAt: now };
}

export interface CreateGroupInput {
  id: string;
  tenant: string;
  kind: RunGroup['kind'];
  label: string;
  spec?: RunGroup['spec'];
  runIds?: readonly string[];
  createdBy: string;
  now: string;
}

export function createGroup(input: CreateGroupInput): RunGroup {
  const group = {
    id: input.id,
    tenant: input.tenant,
    kind: input.kind,
    label: input.label,
    spec: input.spec ?? {},
    runIds: [...(input.runIds ?? [])],
    status: 'queued' as const,
    createdBy: input.createdBy,
    createdAt: input.now,
    updatedAt: input.now,
  };
  const parsed = RunGroup.safeParse(group);
  if (!parsed.success) throw new RunModelError('invalid_input', 'invalid run group', {}, parsed.error.issues);
  return parsed.data;
}

/** A copy of the group with runs added (already-present ids are ignored) and its status left to rollup. */
export function addRuns(group: RunGroup, runIds: readonly string[], now: string): RunGroup {
  const fresh = runIds.filter((id, i) => !group.runIds.includes(id) && runIds.indexOf(id) === i);
  return fresh.length ? { ...group, runIds: [...group.runIds, ...fresh], updatedAt: now } : { ...group };
}

/**
 * A copy of the group carrying this scoring's aggregate. Scoring an experiment promotes it to a
 * scorecard — "promote" and "re-score" are the same operation with different inputs.
 */
export function attachScoring(group: RunGroup, scoring: Scoring): RunGroup {
  if (scoring.groupId !== group.id) {
    throw new RunModelError('invalid_input', `scoring ${scoring.id} belongs to group ${scoring.groupId}`);
  }
  return {
    ...group,
    kind: group.kind === 'experiment' ? 'scorecard' : group.kind,
    scoring: {
      scoringId: scoring.id,
      ...(scoring.rescoreOf !== undefined && { rescoreOf: scoring.rescoreOf }),
      aggregate: scoring.aggregate,
      scoredAt: scoring.createdAt,
    },
    updatedAt: scoring.createdAt,
  };
}
