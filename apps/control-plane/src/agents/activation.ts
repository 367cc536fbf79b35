// An agent's activation — a conversation message (member-caused, interactive) or a subscription's event
// (event-caused, background) — is an agent run created through the one gate. Whatever door it came through,
// the control plane completes its spec from the registry here: the agent's current version and model in the
// subject, its placement (the agent service), and the envelope delegated to the turn from its tenant.
//
// The "+1": the gate counts the activation itself against the slice it opens. The agent's `runs` is what
// a turn may CAUSE, so the slice's `capRuns` is `runs + 1` (likewise `inFlight + 1`): an agent with a
// 5-run envelope gets exactly 5 admitted caused runs.
import type { Executor } from '../db/tx.js';
import type { CreateRunInput } from '../services/types.js';
import { behaviourOf, findAgent } from './registry.js';
import type { AgentEnvelope } from './schemas.js';

export const AGENT_PLACEMENT = { where: 'runtime', target: 'agent-service' } as const;

/** The slice a turn opens: the agent's envelope, counting the turn itself once. */
export function turnEnvelope(e: AgentEnvelope): NonNullable<CreateRunInput['envelope']> {
  return {
    ...(e.usd !== undefined ? { capUsd: e.usd } : {}),
    ...(e.tokens !== undefined ? { capTokens: e.tokens } : {}),
    ...(e.runs !== undefined ? { capRuns: e.runs + 1 } : {}),
    ...(e.inFlight !== undefined ? { inFlightCap: e.inFlight + 1 } : {}),
  };
}

/**
 * An agent run's spec completed from the registry (agents of the tenant only). A spec naming no registered
 * agent is left as it is (the agent bridge's own runs); a spec that opens its own envelope keeps it.
 */
export async function agentRunSpec(
  ex: Executor,
  tenant: string,
  raw: CreateRunInput,
): Promise<CreateRunInput> {
  if (raw.kind !== 'agent' || typeof raw.subject !== 'object' || raw.subject === null) return raw;
  const subject = raw.subject as Record<string, unknown>;
  if (typeof subject.agentId !== 'string') return raw;
  const agent = await findAgent(ex, tenant, subject.agentId);
  if (!agent) return raw;
  const b = await behaviourOf(ex, tenant, agent.id, agent.version);
  return {
    ...raw,
    subject: {
      agentId: agent.id,
      agentVersion: String(agent.version),
      model: b.model,
      ...(typeof subject.conversationId === 'string' ? { conversationId: subject.conversationId } : {}),
      permissionMode: typeof subject.permissionMode === 'string' ? subject.permissionMode : 'ask',
    },
    placement: AGENT_PLACEMENT,
    envelope: raw.envelope ?? turnEnvelope(b.envelope),
  };
}
