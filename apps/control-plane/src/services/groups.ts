import {
  addUsage,
  EMPTY_USAGE,
  type Judge,
  RunStatus,
  rollupStatus,
  TERMINAL_STATUSES,
  type Usage,
} from '@everdict/run-model';
import type { Selectable } from 'kysely';
import { iso, json } from '../db/numeric.js';
import type { RunGroupsTable } from '../db/schema.js';
import { type Executor, isUniqueViolation, type Tx, withTx } from '../db/tx.js';
import { ControlPlaneError, invalidCursor, isControlPlaneError, notFound } from '../errors.js';
import { decodeCursor, encodeCursor, rowToView, selectRunRows } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { assertPlaceable } from '../runners/placement.js';
import type { GroupService } from './api.js';
import { asControlPlaneError } from './boundary.js';
import type { Deps } from './context.js';
import { type Actor, createRunTx } from './lifecycle.js';
import { who } from './runs.js';
import { scoreTx, scoringView } from './scoring.js';
import {
  CreateGroupInput,
  type CreateRunContext,
  type GroupView,
  ListGroupsQuery,
  PromoteGroupInput,
  ScoreGroupInput,
} from './types.js';

type GroupRow = Selectable<RunGroupsTable>;

/**
 * Counts by status and run-model's rollup rule (`empty` while the group has no runs), and what its runs used:
 * run-model's `addUsage` over each run's usage as its executor reported it (a measure a run did not report
 * counts 0), the CPU time of the runs that reported one beside it.
 */
function rollupOf(runs: readonly { status: string; usage: unknown }[]): GroupView['rollup'] {
  const byStatus: Record<string, number> = {};
  let usage = EMPTY_USAGE;
  let cpuTimeMs = 0;
  for (const r of runs) {
    byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    // Stored as reported: checked once, at the transition that stored it (run-model's ReportedUsage).
    const reported = (r.usage ?? {}) as Record<string, unknown>;
    usage = addUsage(usage, { ...EMPTY_USAGE, ...pickUsage(reported) });
    if (typeof reported.cpuTimeMs === 'number') cpuTimeMs += reported.cpuTimeMs;
  }
  const known = runs.map((r) => RunStatus.parse(r.status));
  return {
    total: runs.length,
    byStatus,
    status: known.length ? rollupStatus(known) : 'empty',
    usage: { ...usage, cpuTimeMs },
  };
}

/** The `Usage` measures of a stored usage (the rest — `cpuTimeMs`, a runner's own — are not run-model's). */
function pickUsage(u: Record<string, unknown>): Partial<Usage> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(EMPTY_USAGE)) if (typeof u[k] === 'number') out[k] = u[k];
  return out;
}

async function groupView(ex: Executor, g: GroupRow): Promise<GroupView> {
  const runs = await ex
    .selectFrom('runs')
    .select(['id', 'status', 'usage'])
    .where('tenant_id', '=', g.tenant_id)
    .where('group_id', '=', g.id)
    .orderBy('id')
    .execute();
  return {
    id: g.id,
    tenantId: g.tenant_id,
    kind: g.kind as GroupView['kind'],
    label: g.label,
    spec: g.spec,
    runIds: runs.map((r) => r.id),
    rollup: rollupOf(runs),
    scoring: await scoringView(ex, g.scoring_id),
    createdBy: g.created_by,
    createdAt: iso(g.created_at)!,
    updatedAt: iso(g.updated_at)!,
  };
}

async function findGroup(ex: Executor, tenant: string, id: string): Promise<GroupRow> {
  const g = await ex
    .selectFrom('run_groups')
    .selectAll()
    .where('tenant_id', '=', tenant)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!g) throw notFound('group', id);
  return g;
}

/**
 * One group and its N runs in the caller's transaction — every door that starts a group goes through here
 * (`POST /groups`; an agent's `start_experiment`, whose runs are caused by its turn: `ctx.causedByRunId`).
 * Each run goes through the one gate; a refusal throws and the caller's transaction leaves nothing.
 */
export async function createGroupTx(
  tx: Tx,
  deps: Deps,
  actor: Actor,
  input: ReturnType<typeof CreateGroupInput.parse>,
  ctx: CreateRunContext = {},
): Promise<{ group: GroupView; runs: RunView[] }> {
  const id = deps.ids('grp');
  const at = deps.clock();
  await tx
    .insertInto('run_groups')
    .values({
      id,
      tenant_id: actor.tenant,
      kind: input.kind,
      label: input.label,
      spec: json({ ...input.spec, repeat: input.repeat ?? null, cases: input.cases?.length ?? null }),
      scoring_id: null,
      request_id: input.requestId ?? null,
      created_by: actor.actor,
      created_at: at,
      updated_at: at,
    })
    .execute();
  const role = input.kind === 'experiment' ? 'case' : 'child';
  const n = input.repeat ?? input.cases?.length ?? 0;
  const runs: RunView[] = [];
  for (let i = 0; i < n; i++) {
    const c = input.cases?.[i];
    const baseSubject = (input.spec.subject ?? {}) as Record<string, unknown>;
    const subject = c === undefined ? baseSubject : mergeCase(input.spec.kind, baseSubject, c);
    const { requestId: _r, ...spec } = input.spec;
    const { row } = await createRunTx(
      tx,
      deps,
      actor,
      { ...spec, class: spec.class ?? 'batch', subject, group: { id, role } },
      ctx,
    );
    runs.push(rowToView(row));
  }
  const g = await findGroup(tx, actor.tenant, id);
  return { group: await groupView(tx, g), runs };
}

/** Cancels one run of a tenant and its causal descendants (the runs service's cascade); answers the ids. */
export type CancelRun = (tenant: string, runId: string, reason: string) => Promise<string[]>;

/** The most runs of a group one read of its unsettled runs lists (the cancel reads again until none is left). */
const CANCEL_PAGE = 500;

/**
 * `judge` decides `judge` graders; without one they are refused (400 judge_unavailable). `cancelRun` is the runs
 * service's cancel (a group's cancel cancels each of its runs the same way).
 */
export function groupService(deps: Deps, judge?: Judge, cancelRun?: CancelRun): GroupService {
  return {
    async create(p, raw) {
      const input = asControlPlaneError(() => CreateGroupInput.parse(raw), { in: 'body' });
      await assertPlaceable(deps, p.tenantId, input.spec);
      try {
        return await withTx(deps.db, (tx) => createGroupTx(tx, deps, who(p), input));
      } catch (e) {
        if (input.requestId && isUniqueViolation(e)) {
          const g = await deps.db
            .selectFrom('run_groups')
            .selectAll()
            .where('tenant_id', '=', p.tenantId)
            .where('request_id', '=', input.requestId)
            .executeTakeFirstOrThrow();
          const runs = await selectRunRows(deps.db)
            .selectAll()
            .where('tenant_id', '=', p.tenantId)
            .where('group_id', '=', g.id)
            .orderBy('id')
            .execute();
          return { group: await groupView(deps.db, g), runs: runs.map(rowToView) };
        }
        throw e;
      }
    },
    async get(p, id) {
      return groupView(deps.db, await findGroup(deps.db, p.tenantId, id));
    },
    async list(p, raw) {
      const q = asControlPlaneError(() => ListGroupsQuery.parse(raw), { in: 'query' });
      let sel = deps.db.selectFrom('run_groups').selectAll().where('tenant_id', '=', p.tenantId);
      if (q.kind) sel = sel.where('kind', '=', q.kind);
      const b = q.cursor ? decodeCursor(q.cursor) : null;
      if (q.cursor && !b) throw invalidCursor();
      if (b) {
        const t = new Date(b.createdAt);
        sel = sel.where((eb) =>
          eb.or([eb('created_at', '<', t), eb.and([eb('created_at', '=', t), eb('id', '<', b.id)])]),
        );
      }
      const rows = await sel
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(q.limit + 1)
        .execute();
      const page = rows.slice(0, q.limit);
      const last = page.at(-1);
      return {
        items: await Promise.all(page.map((g) => groupView(deps.db, g))),
        nextCursor: rows.length > q.limit && last ? encodeCursor(last) : null,
      };
    },
    async score(p, id, raw) {
      const input = asControlPlaneError(() => ScoreGroupInput.parse(raw), { in: 'body' });
      return scoreTx(deps, p.tenantId, await findGroup(deps.db, p.tenantId, id), {
        graders: input.graders,
        rescoreOf: input.rescoreOf ?? null,
        judge,
      });
    },
    async promote(p, id, raw) {
      const input = asControlPlaneError(() => PromoteGroupInput.parse(raw), { in: 'body' });
      const g = await findGroup(deps.db, p.tenantId, id);
      if (g.kind !== 'experiment')
        throw new ControlPlaneError('conflict', `group ${id} is a ${g.kind}, not an experiment`);
      // The kind changes in the scoring's own transaction, and only from `experiment`: of concurrent
      // promotions one commits, the others are a 409 that saved no scoring.
      await scoreTx(deps, p.tenantId, g, {
        graders: input.graders,
        rescoreOf: g.scoring_id,
        judge,
        within: async (tx) => {
          const promoted = await tx
            .updateTable('run_groups')
            .set({ kind: 'scorecard', label: input.label ?? g.label, updated_at: deps.clock() })
            .where('tenant_id', '=', p.tenantId)
            .where('id', '=', id)
            .where('kind', '=', 'experiment')
            .returning('id')
            .executeTakeFirst();
          if (!promoted) throw new ControlPlaneError('conflict', `group ${id} is no longer an experiment`);
        },
      });
      return groupView(deps.db, await findGroup(deps.db, p.tenantId, id));
    },
    async cancel(p, id, reason = 'cancelled with its group') {
      const group = await findGroup(deps.db, p.tenantId, id);
      if (!cancelRun) throw new ControlPlaneError('internal', 'this core cancels no groups');
      // Each unsettled run as the runs service cancels one (its descendants too, in bounded batches), in id
      // order, read again until none is left. A run that settles meanwhile is refused (409) and skipped: it is
      // no longer the cancel's. A run a cascade already cancelled is settled by the next read.
      const cancelled = new Set<string>();
      const skipped = new Set<string>();
      for (;;) {
        const live = await deps.db
          .selectFrom('runs')
          .select('id')
          .where('tenant_id', '=', p.tenantId)
          .where('group_id', '=', group.id)
          .where('status', 'not in', TERMINAL_STATUSES)
          .orderBy('id')
          .limit(CANCEL_PAGE)
          .execute();
        const todo = live.map((r) => r.id).filter((r) => !skipped.has(r));
        if (todo.length === 0) break;
        for (const runId of todo) {
          try {
            for (const c of await cancelRun(p.tenantId, runId, reason)) cancelled.add(c);
          } catch (e) {
            if (!isControlPlaneError(e) || e.code !== 'conflict') throw e;
            skipped.add(runId);
          }
        }
      }
      return {
        group: await groupView(deps.db, await findGroup(deps.db, p.tenantId, id)),
        cancelled: [...cancelled],
      };
    },
  };
}

/**
 * One case merged into the spec's subject: an eval case becomes caseId/caseSpec, its `expected` (the answer key)
 * the subject's `expected` — beside the case, never in it, so the harness is not handed its answer; analysis
 * config gets `case`.
 */
function mergeCase(
  kind: string,
  subject: Record<string, unknown>,
  c: Record<string, unknown>,
): Record<string, unknown> {
  if (kind === 'eval') {
    const caseId = String(c.caseId ?? c.id ?? subject.caseId ?? 'case');
    if (!Object.hasOwn(c, 'expected')) return { ...subject, caseId, caseSpec: c };
    const { expected, ...caseSpec } = c;
    return { ...subject, caseId, caseSpec, expected };
  }
  if (kind === 'analysis' && subject.config && typeof subject.config === 'object')
    return { config: { ...(subject.config as object), case: c } };
  return { ...subject, case: c };
}
