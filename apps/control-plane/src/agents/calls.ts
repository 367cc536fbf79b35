// What a leased turn does through the control plane while its interval runs: dispatch a tool call (a
// CAUSED run through the one gate, drawing from the turn's envelope; or a question for a person), read a
// run of its tenant, append to and read its transcript (the run's trajectory). Every call names the lease
// (holder + epoch): a stale one is 409 `stale_lease` and nothing is written. A refused caused run (402/429,
// 422 no_placement) leaves no call behind: the model sees the refusal as the tool's result.
import { type Tx, withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { lockRun, type RunRow, rowToView, selectRunRows } from '../ledger/runs.js';
import { resolveHarness } from '../runners/harnesses.js';
import { assertPlaceable } from '../runners/placement.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import { createGroupTx } from '../services/groups.js';
import { createRunTx } from '../services/lifecycle.js';
import { CreateGroupInput, type Principal } from '../services/types.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import type { HolderPolicy } from './hosts.js';
import { assertTurnLease } from './leases.js';
import {
  CallInput,
  type ExperimentInput,
  HeldLease,
  InputAnswer,
  ReadInput,
  TranscriptAppend,
  TranscriptQuery,
} from './schemas.js';
import { announceTurnReady } from './turn-waiters.js';
import { declinesOf, pendingOf, resolutionsOf } from './turns.js';

/** The agent run `runId`, whatever its tenant (the service token is the agent service's, not a tenant's). */
export async function turnOf(ex: Tx | Deps['db'], runId: string): Promise<RunRow> {
  const row = await selectRunRows(ex).selectAll().where('id', '=', runId).executeTakeFirst();
  if (!row) throw notFound('run', runId);
  if (row.kind !== 'agent')
    throw new ControlPlaneError('conflict', `run ${runId} is a ${row.kind} run, not an agent turn`, {
      reason: 'not_an_agent_run',
    });
  return row;
}

/** Lock the turn and check the lease; the turn must be running (an interval is open). */
async function heldTurn(
  tx: Tx,
  runId: string,
  lease: { holder: string; epoch: number },
  holders: HolderPolicy,
): Promise<RunRow> {
  const found = await turnOf(tx, runId);
  const row = await lockRun(tx, found.tenant_id, runId);
  if (!row) throw notFound('run', runId);
  await assertTurnLease(tx, runId, lease.epoch, lease.holder, holders);
  if (row.status !== 'running')
    throw new ControlPlaneError('conflict', `turn ${runId} is ${row.status}: no interval is open`, {
      reason: 'not_running',
    });
  return row;
}

const parse = <T>(schema: { parse(v: unknown): T }, raw: unknown): T =>
  asControlPlaneError(() => schema.parse(raw));

function harnessRef(s: string): { id: string; version: string } {
  const at = s.lastIndexOf('@');
  if (at <= 0 || at === s.length - 1)
    throw new ControlPlaneError('bad_request', `harness ${s}: name a registered version as id@version`);
  return { id: s.slice(0, at), version: s.slice(at + 1) };
}

/** What a dispatch answers: the caused run, or the experiment group and its runs (ids in id order). */
export interface Dispatched {
  callId: string;
  runId: string | null;
  groupId?: string;
  runIds?: string[];
}

async function dispatched(
  ex: Tx,
  tenant: string,
  call: { call_id: string; caused_run_id: string | null; caused_group_id: string | null },
): Promise<Dispatched> {
  if (!call.caused_group_id) return { callId: call.call_id, runId: call.caused_run_id };
  const runs = await ex
    .selectFrom('runs')
    .select('id')
    .where('tenant_id', '=', tenant)
    .where('group_id', '=', call.caused_group_id)
    .orderBy('id')
    .execute();
  return { callId: call.call_id, runId: null, groupId: call.caused_group_id, runIds: runs.map((r) => r.id) };
}

/** A `start_experiment` call as a POST /groups input: kind `experiment`, eval runs of one harness version. */
function experimentGroup(turnId: string, callId: string, e: ExperimentInput) {
  const raw = {
    kind: 'experiment',
    label: e.dataset ?? `agent turn ${turnId} ${callId}`,
    spec: {
      kind: 'eval',
      subject: { harness: harnessRef(e.harness), caseId: e.dataset ?? 'experiment' },
    },
    ...(e.cases ? { cases: e.cases } : { repeat: e.repeat ?? 1 }),
    requestId: `call:${turnId}:${callId}`,
  };
  return parse(CreateGroupInput, raw);
}

/** Only the turn's creator, or an admin of its tenant, sees and answers what it waits on. */
function assertMayAnswer(p: Principal, row: RunRow): void {
  if (row.created_by !== p.actor && p.role !== 'admin')
    throw new ControlPlaneError('forbidden', 'only the turn’s creator or an admin may answer it');
}

export function turnCalls(deps: Deps, trajectories: RunTrajectories | null, holders: HolderPolicy) {
  const store = (): RunTrajectories => {
    if (!trajectories)
      throw new ControlPlaneError('storage_unavailable', 'this control plane has no trajectory store');
    return trajectories;
  };
  return {
    /** Dispatch one tool call (idempotent per (turn, callId)): 201 `{callId, runId, groupId?, runIds?}`. */
    async dispatch(runId: string, raw: unknown): Promise<Dispatched> {
      const input = parse(CallInput, raw);
      return withTx(deps.db, async (tx) => {
        const turn = await heldTurn(tx, runId, input, holders);
        const prior = await tx
          .selectFrom('agent_calls')
          .select(['call_id', 'caused_run_id', 'caused_group_id'])
          .where('turn_id', '=', runId)
          .where('call_id', '=', input.callId)
          .executeTakeFirst();
        if (prior) return dispatched(tx, turn.tenant_id, prior);
        const actor = { tenant: turn.tenant_id, actor: turn.created_by };
        let caused: string | null = null;
        let group: string | null = null;
        if (input.tool === 'run_command') {
          // Through the one gate, caused by the turn: its envelope pays (402 when spent), its depth counts.
          const { row } = await createRunTx(
            tx,
            deps,
            actor,
            {
              kind: 'command',
              subject: {
                command: input.input.command,
                ...(input.input.image ? { image: input.input.image } : {}),
              },
              requestId: `call:${runId}:${input.callId}`,
            },
            { causedByRunId: runId },
          );
          caused = row.id;
        } else if (input.tool === 'start_experiment') {
          // One experiment group (the POST /groups rule): N eval runs, each caused by the turn through the
          // gate — the envelope pays for every one; a refusal of any leaves no group and no call.
          const g = experimentGroup(runId, input.callId, input.input);
          const h = harnessRef(input.input.harness);
          await resolveHarness(tx, turn.tenant_id, h.id, h.version); // an unknown version is 404, whatever lane
          await assertPlaceable(deps, turn.tenant_id, g.spec, tx);
          const created = await createGroupTx(tx, deps, actor, g, { causedByRunId: runId });
          group = created.group.id;
        }
        await tx
          .insertInto('agent_calls')
          .values({
            turn_id: runId,
            call_id: input.callId,
            tenant_id: turn.tenant_id,
            tool: input.tool,
            caused_run_id: caused,
            caused_group_id: group,
            question: input.tool === 'ask_approval' ? input.input.question : null,
            resolution: null,
            created_at: deps.clock(),
            resolved_at: null,
          })
          .execute();
        return dispatched(tx, turn.tenant_id, {
          call_id: input.callId,
          caused_run_id: caused,
          caused_group_id: group,
        });
      });
    },

    /** The results that arrived so far (what a blocking interval polls). */
    async resolutions(runId: string, raw: unknown) {
      const lease = parse(HeldLease, raw);
      return withTx(deps.db, async (tx) => {
        await heldTurn(tx, runId, lease, holders);
        return { resolutions: await resolutionsOf(tx, runId) };
      });
    },

    /** A run of the turn's tenant: its outputs, or a page of its trajectory. */
    async read(turnId: string, raw: unknown): Promise<Record<string, unknown>> {
      const input = parse(ReadInput, raw);
      const turn = await withTx(deps.db, (tx) => heldTurn(tx, turnId, input, holders));
      const target = await selectRunRows(deps.db)
        .selectAll()
        .where('tenant_id', '=', turn.tenant_id)
        .where('id', '=', input.runId)
        .executeTakeFirst();
      if (!target) throw notFound('run', input.runId);
      if (input.what === 'outputs') {
        const v = rowToView(target);
        return { runId: v.id, kind: v.kind, status: v.status, outputs: v.outputs, usage: v.usage };
      }
      const page = await store().read(turn.tenant_id, input.runId, {
        offset: input.offset,
        limit: input.limit,
      });
      return { events: page.items, nextOffset: page.nextOffset };
    },

    /**
     * Append the turn's events (its transcript) under the lease: checked in the transcript writer's
     * transaction, the turn's row locked, then its host's row (FOR SHARE, `admitHolder`) — a revoke of the
     * host waits for the write, or the write for the revoke (then 401); never a batch checked before a revoke,
     * or another epoch's grant, landing after it.
     */
    async append(runId: string, raw: unknown): Promise<{ eventCount: number }> {
      const input = parse(TranscriptAppend, raw);
      const found = await turnOf(deps.db, runId);
      const r = await store().appendChecked(found.tenant_id, runId, input.events, async (tx) => {
        await heldTurn(tx, runId, input, holders);
      });
      return { eventCount: r.eventCount };
    },

    /** A page of the turn's transcript (the service may read any turn: resuming needs no lease yet). */
    async transcript(runId: string, raw: unknown) {
      const q = parse(TranscriptQuery, raw);
      const turn = await turnOf(deps.db, runId);
      const page = await store().read(turn.tenant_id, runId, q);
      return { events: page.items, nextOffset: page.nextOffset, eventCount: page.eventCount };
    },

    /** GET /runs/:id/input: the turn's calls still waiting, with their ids (the turn's creator, or an admin). */
    async pending(p: Principal, runId: string) {
      const row = await selectRunRows(deps.db)
        .selectAll()
        .where('tenant_id', '=', p.tenantId)
        .where('id', '=', runId)
        .executeTakeFirst();
      if (row?.kind !== 'agent') throw notFound('run', runId);
      assertMayAnswer(p, row);
      const pending = await pendingOf(deps.db, p.tenantId, runId);
      const declined = await declinesOf(deps.db, runId);
      return { runId, status: row.status, pending, ...(declined.length > 0 ? { declined } : {}) };
    },

    /** POST /runs/:id/input: a person answers a pending approval (the turn's creator, or an admin). */
    async answer(p: Principal, runId: string, raw: unknown) {
      const input = parse(InputAnswer, raw);
      return withTx(deps.db, async (tx) => {
        const row = await lockRun(tx, p.tenantId, runId);
        if (row?.kind !== 'agent') throw notFound('run', runId);
        assertMayAnswer(p, row);
        if (['succeeded', 'failed', 'cancelled'].includes(row.status))
          throw new ControlPlaneError('conflict', `turn ${runId} is ${row.status}`, { reason: 'terminal' });
        const call = await tx
          .selectFrom('agent_calls')
          .selectAll()
          .where('turn_id', '=', runId)
          .where('call_id', '=', input.callId)
          .forUpdate()
          .executeTakeFirst();
        if (call?.tool !== 'ask_approval') throw notFound('approval call', input.callId);
        if (call.resolved_at)
          throw new ControlPlaneError('conflict', `call ${input.callId} is already answered`, {
            reason: 'already_answered',
          });
        const resolution = {
          approved: input.approved,
          ...(input.note !== undefined ? { note: input.note } : {}),
          by: p.actor,
        };
        await tx
          .updateTable('agent_calls')
          .set({ resolution: JSON.stringify(resolution), resolved_at: deps.clock() })
          .where('turn_id', '=', runId)
          .where('call_id', '=', input.callId)
          .execute();
        // The turn may be ready now: the hosts' long-polls look again at the commit.
        await announceTurnReady(tx);
        return { run: rowToView(row), callId: input.callId, resolution };
      });
    },
  };
}
