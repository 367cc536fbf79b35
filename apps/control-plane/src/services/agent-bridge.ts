// The agent service reports run transitions; the control plane owns the run, its facts and its record.
// Each report is one status-machine event saved with its record segments in one transaction
// (transitionTx): `started` (no runId opens an agent run through the gate) begins an interval — only while
// the tenant has room under its `maxConcurrent` (429, rule concurrency, nothing created, otherwise); a run
// already queued starts only through its lease claim (agents/leases.ts `claimAndStart`: WFQ order, the quota),
// never by a report (409 `not_claimed`);
// `awaiting_input` / `suspended` seal it (executed, outcome yielded) and park the transcript (suspended
// segment: snapshot + manifest); `resumed` un-parks it (resumed segment: idle energy + provenance);
// `succeeded` / `failed` / `cancelled` seal the open interval, if any, and close the record. A report the
// machine refuses (e.g. `resumed` while running, anything after a settle) is a 409 that changes nothing.
import type { RunEvent } from '@everdict/run-model';
import { sql } from 'kysely';
import { runningOf } from '../admission-store/sql/released.js';
import type { Tx } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { lockRun, type RunRow, rowToView } from '../ledger/runs.js';
import type { AgentBridgeService } from './api.js';
import { asControlPlaneError } from './boundary.js';
import type { Deps } from './context.js';
import { createRunTx, type TransitionExtras, transitionTx } from './lifecycle.js';
import { who } from './runs.js';
import { AgentRunEventInput } from './types.js';

type Input = ReturnType<typeof AgentRunEventInput.parse>;

function eventOf(input: Input): RunEvent {
  switch (input.event) {
    case 'started':
      return { type: 'start' };
    case 'awaiting_input':
    case 'suspended':
      return { type: 'await_input', reason: input.event };
    case 'resumed':
      return { type: 'resume_input' };
    case 'succeeded':
      return { type: 'succeed' };
    case 'failed':
      return {
        type: 'fail',
        error: input.error ?? { code: 'agent_failed', message: 'agent reported failure' },
      };
    case 'cancelled':
      return { type: 'cancel', reason: input.error?.message ?? 'agent reported cancellation' };
  }
}

function extrasOf(input: Input): TransitionExtras {
  const exitCode = input.outputs?.exitCode;
  return {
    ...(input.outputs ? { outputs: { ...input.outputs } } : {}),
    // run-model's Usage, validated by AgentRunEventInput (non-negative, finite): never a credit.
    ...(input.usage ? { usage: { ...input.usage } } : {}),
    ...(input.transcript ? { transcript: input.transcript } : {}),
    ...(input.manifest ? { manifest: input.manifest } : {}),
    ...(input.account ? { account: input.account } : {}),
    interval: {
      meter: 'agent-wallclock-model',
      watts: 2,
      ...(exitCode !== undefined ? { exitCode } : {}),
    },
  };
}

/**
 * A run the agent service started on its own (`started`, no runId) is running from its birth: it takes one
 * of the tenant's `maxConcurrent` slots as a claim would, or is refused — 429 `capacity_exceeded`, rule
 * `concurrency`, and the create rolls back with it. The tenant row is locked (the create's queued count
 * already did), so two reports never both take the last slot.
 */
async function assertRoomToStart(tx: Tx, tenant: string): Promise<void> {
  const { rows } = await sql<{ max_concurrent: number; running: number }>`
    SELECT t.max_concurrent, ${runningOf('t')} AS running FROM adm_tenants t WHERE t.tenant = ${tenant}
    FOR UPDATE OF t`.execute(tx);
  const row = rows[0];
  if (!row) return; // no admission row: the create above would have refused
  const running = Number(row.running);
  const maxConcurrent = Number(row.max_concurrent);
  if (running >= maxConcurrent)
    throw new ControlPlaneError(
      'capacity_exceeded',
      `tenant ${tenant} runs ${running} of its maxConcurrent ${maxConcurrent}: no room to start an agent run`,
      { rule: 'concurrency', maxConcurrent, running },
    );
}

export function agentBridgeService(deps: Deps): AgentBridgeService {
  return {
    async report(p, raw) {
      const input = asControlPlaneError(() => AgentRunEventInput.parse(raw), { in: 'body' });
      // runrecord's refusals (SnapshotMismatch → 409 snapshot_mismatch, …) leave as the core's own errors.
      const row = await asControlPlaneError(() =>
        withTx(deps.db, async (tx) => {
          let runId = input.runId;
          let locked: RunRow | undefined;
          if (input.event === 'started' && !runId) {
            if (!input.agent) throw new ControlPlaneError('bad_request', 'started without runId needs agent');
            const { row } = await createRunTx(
              tx,
              deps,
              who(p),
              {
                kind: 'agent',
                subject: input.agent,
                placement: { where: 'runtime', target: 'agent-service' },
                class: input.cause === 'chat' ? 'interactive' : 'background',
                ...(input.groupId ? { group: { id: input.groupId, role: 'turn' } } : {}),
                ...(input.requestId ? { requestId: input.requestId } : {}),
              },
              input.cause === 'chat'
                ? { cause: 'member' }
                : { cause: 'event', eventId: input.eventId ?? 'agent', eventKind: 'agent.activated' },
            );
            if (row.status !== 'queued') return row; // a repeated requestId: the first report's run
            await assertRoomToStart(tx, p.tenantId);
            runId = row.id;
          } else {
            if (!runId) throw new ControlPlaneError('bad_request', `${input.event} needs runId`);
            // Locked: a run requeued meanwhile (a lost lease) is seen queued here, not past this check.
            const existing = await lockRun(tx, p.tenantId, runId);
            if (!existing) throw notFound('run', runId);
            if (existing.kind !== 'agent') {
              throw new ControlPlaneError(
                'conflict',
                `run ${runId} is a ${existing.kind} run, not an agent run`,
                {
                  reason: 'not_an_agent_run',
                },
              );
            }
            // A queued run starts only through the claim (its lease): the fair queue's order and the tenant's
            // quota. A report starting it would skip both (and leave its queue entry unclaimed).
            if (input.event === 'started' && existing.status === 'queued')
              throw new ControlPlaneError(
                'conflict',
                `run ${runId} is queued: it starts through its lease claim (POST /internal/agent/v1/leases), not a report`,
                { reason: 'not_claimed' },
              );
            locked = existing;
          }
          const extras = { ...extrasOf(input), ...(locked ? { locked } : {}) };
          return (await transitionTx(tx, deps, p.tenantId, runId, eventOf(input), extras)).row;
        }),
      );
      return rowToView(row);
    },
  };
}
