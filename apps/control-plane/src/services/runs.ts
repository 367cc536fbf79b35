// RunService: create (one gate), list, get, cancel (cascades), record (verified on read), events.
import { withTx } from '../db/tx.js';
import { ControlPlaneError, invalidCursor, notFound } from '../errors.js';
import { listEvents } from '../ledger/events.js';
import { readRecord } from '../ledger/records.js';
import { decodeCursor, encodeCursor, findRun, listRuns, rowToView } from '../ledger/runs.js';
import { assertPlaceable } from '../runners/placement.js';
import { isSessionSandbox } from '../sessions/service.js';
import type { RunService } from './api.js';
import { asControlPlaneError } from './boundary.js';
import { type CascadeWorker, openCascade } from './cascade.js';
import type { Deps } from './context.js';
import { type CombinerOptions, createCombiner } from './create-combiner.js';
import { eventPosition } from './events-feed.js';
import { transitionTx } from './lifecycle.js';
import { runScores } from './scoring.js';
import {
  type CreateRunContext,
  CreateRunInput,
  isServicePrincipal,
  ListRunsQuery,
  type Principal,
} from './types.js';

/** Run specs one `POST /runs:batch` may carry. */
export const MAX_RUNS_BATCH = 1000;

export const who = (p: Principal) => ({ tenant: p.tenantId, actor: p.actor });

/**
 * Cancel a run, then its non-terminal causal descendants but the tenant's opted-out ones (cascade.ts): the
 * root and the cascade's job in one transaction, the descendants in bounded batches. Returns every run
 * this call cancelled (the root first).
 */
export async function cancelTree(
  deps: Deps,
  cascades: CascadeWorker,
  tenant: string,
  runId: string,
  reason: string,
): Promise<string[]> {
  const jobId = await withTx(deps.db, async (tx) => {
    await transitionTx(tx, deps, tenant, runId, { type: 'cancel', reason });
    return openCascade(tx, deps, tenant, runId, reason);
  });
  return [runId, ...(await cascades.run(jobId))];
}

/**
 * What a caller may say about a run's cause. An API key names at most a causer run — one its own principal
 * created, or any of the tenant's when the key is an admin (otherwise 404, as for a run that does not exist:
 * nobody spends an envelope they may not name). Activations (event, schedule, subscription causes) are the
 * service's to state: they come from the service-token path (or the core's own consumers) only.
 */
async function attributionOf(deps: Deps, p: Principal, ctx: CreateRunContext): Promise<CreateRunContext> {
  if (isServicePrincipal(p)) return ctx;
  const causer = ctx.causedByRunId;
  if (causer === undefined) return {};
  const row = await deps.db
    .selectFrom('runs')
    .select('created_by')
    .where('tenant_id', '=', p.tenantId)
    .where('id', '=', causer)
    .executeTakeFirst();
  if (!row || (p.role !== 'admin' && row.created_by !== p.actor)) throw notFound('run', causer);
  return { causedByRunId: causer };
}

/** A run's `group` must be a group of the caller's tenant (another tenant's, or none: 404). */
export async function groupOfTenant(deps: Deps, p: Principal, input: unknown): Promise<void> {
  const parsed = CreateRunInput.shape.group.safeParse((input as { group?: unknown } | null)?.group);
  const id = parsed.success ? parsed.data?.id : undefined;
  if (id === undefined) return; // none, or malformed: the create's own parse answers the 400
  const g = await deps.db
    .selectFrom('run_groups')
    .select('id')
    .where('tenant_id', '=', p.tenantId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!g) throw notFound('group', id);
}

export function runService(
  deps: Deps,
  cascades: CascadeWorker,
  combiner: CombinerOptions = {},
  sessions?: () => import('../sessions/service.js').SessionService | undefined,
): RunService {
  const combine = createCombiner(deps, combiner);
  return {
    async create(p, input, ctx = {}) {
      // A schema refusal from deeper down (the lifecycle's parse of the spec) names the body's fields.
      return asControlPlaneError(
        async () => {
          const attribution = await attributionOf(deps, p, ctx);
          await groupOfTenant(deps, p, input);
          const held = sessions?.();
          if (held && isSessionSandbox(input)) return held.openRun(p, input, attribution); // the same gate, session lane
          await assertPlaceable(deps, p.tenantId, input);
          // Combined: creates arriving while a create transaction is in flight are admitted together in the
          // next one (create-combiner.ts); each still gets exactly the decision a sequential create would.
          const { row, admission } = await combine(who(p), input, attribution);
          return { run: rowToView(row), admission };
        },
        { in: 'body' },
      );
    },
    async createMany(p, inputs) {
      if (!Array.isArray(inputs) || inputs.length < 1 || inputs.length > MAX_RUNS_BATCH)
        throw new ControlPlaneError('bad_request', `a batch holds 1 to ${MAX_RUNS_BATCH} run specs`);
      // The per-item reads (group, placement) first; then every item is handed to the combiner in input
      // order, in one synchronous pass, so the gate decides them in that order (each against the ones
      // before it), and each gets its own outcome — a refusal refuses that item only.
      const checked = await Promise.all(
        inputs.map((input) =>
          groupOfTenant(deps, p, input)
            .then(() => assertPlaceable(deps, p.tenantId, input))
            .then(
              () => null,
              (e: unknown) => ({ error: e }),
            ),
        ),
      );
      return Promise.all(
        inputs.map((input, i) =>
          checked[i]
            ? Promise.resolve(checked[i])
            : combine(who(p), input, {}).then(
                ({ row, admission }) => ({ created: { run: rowToView(row), admission } }),
                (e: unknown) => ({ error: e }),
              ),
        ),
      );
    },
    async list(p, query) {
      const q = asControlPlaneError(() => ListRunsQuery.parse(query), { in: 'query' });
      const before = q.cursor ? decodeCursor(q.cursor) : undefined;
      if (q.cursor && !before) throw invalidCursor();
      const rows = await listRuns(deps.db, p.tenantId, {
        ...q,
        limit: q.limit + 1,
        before: before ?? undefined,
      });
      const page = rows.slice(0, q.limit);
      const last = page.at(-1);
      return {
        items: page.map(rowToView),
        nextCursor: rows.length > q.limit && last ? encodeCursor(last) : null,
      };
    },
    async get(p, runId) {
      const row = await findRun(deps.db, p.tenantId, runId);
      if (!row) throw notFound('run', runId);
      return rowToView(row);
    },
    async scores(p, runId) {
      if (!(await findRun(deps.db, p.tenantId, runId))) throw notFound('run', runId);
      return runScores(deps.db, p.tenantId, runId);
    },
    async cancel(p, runId, reason = 'cancelled by request') {
      const cancelled = await cancelTree(deps, cascades, p.tenantId, runId, reason);
      const row = await findRun(deps.db, p.tenantId, runId);
      if (!row) throw notFound('run', runId);
      return { run: rowToView(row), cancelled };
    },
    async record(p, runId) {
      const row = await findRun(deps.db, p.tenantId, runId);
      if (!row) throw notFound('run', runId);
      return readRecord(deps.db, row);
    },
    async events(p, runId, opts = {}) {
      const row = await findRun(deps.db, p.tenantId, runId);
      if (!row) throw notFound('run', runId);
      const limit = Math.min(Math.max(opts.limit ?? 100, 1), 1000);
      const after = eventPosition(opts.after);
      const items = await listEvents(deps.db, p.tenantId, { runId, after, limit });
      return { items, nextCursor: items.length === limit ? (items.at(-1)?.id ?? null) : null };
    },
  };
}
