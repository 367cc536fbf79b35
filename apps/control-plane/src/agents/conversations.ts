// Conversations: a run group of kind `conversation` bound to one agent; each message is a turn — an agent
// run (member-caused, interactive) through the one gate, its text kept for the turn's first interval.
import { withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { rowToView } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import { groupService } from '../services/groups.js';
import { createRunTx } from '../services/lifecycle.js';
import { who } from '../services/runs.js';
import type { GroupView, Principal } from '../services/types.js';
import { findAgent } from './registry.js';
import { CreateConversationInput, MessageInput } from './schemas.js';

export function conversations(deps: Deps) {
  const groups = groupService(deps);
  return {
    async create(p: Principal, raw: unknown): Promise<GroupView> {
      const input = asControlPlaneError(() => CreateConversationInput.parse(raw));
      const agent = await findAgent(deps.db, p.tenantId, input.agentId);
      if (!agent) throw notFound('agent', input.agentId);
      const id = deps.ids('conv');
      const at = deps.clock();
      await deps.db
        .insertInto('run_groups')
        .values({
          id,
          tenant_id: p.tenantId,
          kind: 'conversation',
          label: agent.name,
          spec: JSON.stringify({ agentId: agent.id }),
          scoring_id: null,
          request_id: null,
          created_by: p.actor,
          created_at: at,
          updated_at: at,
        })
        .execute();
      return groups.get(p, id);
    },

    /** A turn: 202 with the queued run; the gate's refusals (402/429, 409 agent_disabled) change nothing. */
    async message(p: Principal, conversationId: string, raw: unknown): Promise<RunView> {
      const input = asControlPlaneError(() => MessageInput.parse(raw));
      const row = await withTx(deps.db, async (tx) => {
        const group = await tx
          .selectFrom('run_groups')
          .select(['id', 'kind', 'spec'])
          .where('tenant_id', '=', p.tenantId)
          .where('id', '=', conversationId)
          .executeTakeFirst();
        if (group?.kind !== 'conversation') throw notFound('conversation', conversationId);
        const agentId = String((group.spec as { agentId?: unknown }).agentId ?? '');
        const agent = await findAgent(tx, p.tenantId, agentId);
        if (!agent) throw notFound('agent', agentId);
        const { row } = await createRunTx(
          tx,
          deps,
          who(p),
          {
            kind: 'agent',
            subject: { agentId, agentVersion: String(agent.version), conversationId, permissionMode: 'ask' },
            class: 'interactive',
            group: { id: conversationId, role: 'turn' },
          },
          { cause: 'member' },
        );
        const subject = row.subject as { agentVersion?: string };
        await tx
          .insertInto('agent_turns')
          .values({
            run_id: row.id,
            tenant_id: p.tenantId,
            agent_id: agentId,
            agent_version: Number(subject.agentVersion ?? agent.version),
            input_text: input.text,
            parked_at_ms: null,
            transcript_bytes: null,
            created_at: deps.clock(),
          })
          .execute();
        return row;
      });
      if (row.status !== 'queued')
        throw new ControlPlaneError('conflict', `turn ${row.id} is ${row.status}`, { runId: row.id });
      return rowToView(row);
    },
  };
}
