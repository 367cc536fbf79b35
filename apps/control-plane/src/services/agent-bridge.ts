// The agent service reports run transitions; the control plane owns the run, its facts and its record.
// started (no runId) opens an agent run through the gate; awaiting_input/suspended park it (executed +
// suspended segments, a transcript park); resumed un-parks it (resumed segment, idle energy); terminal
// events seal the last interval and close the record.
import type { RunEvent } from '@everdict/run-model';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { rowToView } from '../ledger/runs.js';
import type { AgentBridgeService } from './api.js';
import { asControlPlaneError } from './boundary.js';
import type { Deps } from './context.js';
import { createRunTx, transitionTx } from './lifecycle.js';
import { who } from './runs.js';
import { AgentRunEventInput } from './types.js';

export function agentBridgeService(deps: Deps): AgentBridgeService {
  return {
    async report(p, raw) {
      const input = asControlPlaneError(() => AgentRunEventInput.parse(raw));
      const extras = {
        ...(input.outputs ? { outputs: input.outputs as Record<string, unknown> } : {}),
        ...(input.usage
          ? {
              usage: {
                ...(input.usage.costUsd !== undefined ? { costUsd: input.usage.costUsd } : {}),
                ...(input.usage.tokens !== undefined ? { outputTokens: input.usage.tokens } : {}),
              },
            }
          : {}),
        ...(input.transcript ? { transcript: input.transcript } : {}),
        interval: { meter: 'agent-wallclock-model', watts: 2 },
      };
      const row = await withTx(deps.db, async (tx) => {
        let runId = input.runId;
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
          if (row.status !== 'queued') return row;
          runId = row.id;
        }
        if (!runId) throw new ControlPlaneError('bad_request', `${input.event} needs runId`);
        const event: RunEvent =
          input.event === 'started'
            ? { type: 'start' }
            : input.event === 'awaiting_input' || input.event === 'suspended'
              ? { type: 'await_input', reason: input.event }
              : input.event === 'resumed'
                ? { type: 'resume_input' }
                : input.event === 'succeeded'
                  ? { type: 'succeed' }
                  : input.event === 'failed'
                    ? {
                        type: 'fail',
                        error: input.error ?? { code: 'agent_failed', message: 'agent reported failure' },
                      }
                    : { type: 'cancel', reason: 'agent reported cancellation' };
        return (await transitionTx(tx, deps, p.tenantId, runId, event, extras)).row;
      });
      return rowToView(row);
    },
  };
}
