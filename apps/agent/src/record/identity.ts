// What binds a turn's record to what ran it. The unit and grant set are the control plane's (it opens the
// record; the lease names them); the manifest is computed by the agent process from its own
// configuration, so a process configured differently (another model, prompt, tool set, agent version or
// service protocol) cannot resume a park: runrecord refuses it with ManifestMismatch.
import { blake3, bytesToHex } from '@everdict/runrecord';
import { canonicalJson } from '@everdict/trajectory-store';
import type { AgentSpec } from '../agent-spec.js';

/** The transcript protocol this service speaks (bumped when how a transcript is replayed changes). */
export const AGENT_PROTOCOL = 'everdict-agent/transcript/1';

/** How a manifest is computed (bumped with `manifestOf`'s fields). */
const MANIFEST_SCHEME = 'everdict.agent.manifest/1';

const address = (tag: string, value: unknown) =>
  bytesToHex(blake3(new TextEncoder().encode(`${tag}\n${canonicalJson(value)}`)));

/** The environment manifest of a turn of this agent, as this process would run it. */
export function manifestOf(agent: AgentSpec, protocol: string = AGENT_PROTOCOL): string {
  return address(MANIFEST_SCHEME, {
    protocol,
    agentId: agent.id,
    version: agent.version,
    model: agent.model,
    systemPrompt: agent.systemPrompt,
    tools: [...agent.tools].sort(),
  });
}

/**
 * The address of what this process puts into every manifest it computes — the scheme and its protocol; the
 * rest is the leased agent's, the same on every host. Two processes with the same basis compute the same
 * manifest for every agent: a park one cannot resume (ManifestMismatch), the other cannot either.
 */
export function manifestBasisOf(protocol: string = AGENT_PROTOCOL): string {
  return address('everdict.agent.manifest-basis/1', { scheme: MANIFEST_SCHEME, protocol });
}
