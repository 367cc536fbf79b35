// What binds a turn's record to what ran it. The unit and grant set come from the lease (the control plane
// names them when it opens the record); the manifest is computed by the agent process from its own
// configuration, so a process configured differently (another model, prompt, tool set, agent version or
// service protocol) cannot resume a park: runrecord refuses it with ManifestMismatch.
import { blake3, bytesToHex } from '@everdict/runrecord';
import { canonicalJson } from '@everdict/trajectory-store';
import type { AgentSpec } from '../agent-spec.js';

/** The transcript protocol this service speaks (bumped when how a transcript is replayed changes). */
export const AGENT_PROTOCOL = 'everdict-agent/transcript/1';

const address = (tag: string, value: unknown) =>
  bytesToHex(blake3(new TextEncoder().encode(`${tag}\n${canonicalJson(value)}`)));

/** The environment manifest of a turn of this agent, as this process would run it. */
export function manifestOf(agent: AgentSpec, protocol: string = AGENT_PROTOCOL): string {
  return address('everdict.agent.manifest/1', {
    protocol,
    agentId: agent.id,
    version: agent.version,
    model: agent.model,
    systemPrompt: agent.systemPrompt,
    tools: [...agent.tools].sort(),
  });
}

/** The unit of a turn: one run of one agent version in one tenant (what a local control plane names). */
export function unitIdOf(tenant: string, runId: string, agent: AgentSpec): string {
  return address('everdict.agent.unit/1', { tenant, runId, agentId: agent.id, version: agent.version });
}

/** The grant set a turn runs under: its tools and its envelope (a continuation wanting others is a new run). */
export function grantsIdOf(agent: AgentSpec): string {
  return address('everdict.agent.grants/1', { tools: [...agent.tools].sort(), envelope: agent.envelope });
}
