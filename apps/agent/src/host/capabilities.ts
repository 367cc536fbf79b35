// The capability set this agent process declares to the control plane — on every lease request and every
// decline (`capabilities`; the control plane's README, Agents): the things that decide whether it can resume
// a parked turn. A decline bars its holder only while it declares the same set, so a host that declined a
// park (its manifest refused) is not offered it again until it restarts as something that may resume it —
// another manifest basis (protocol), or another build.
//   - `build:<name>@<version>`: this package's build (an upgrade may resume what the old one refused);
//   - `manifest:<hex>`: the manifest basis (record/identity.ts `manifestBasisOf`) — what this process puts
//     into the manifest it reports at park and resume;
//   - `protocol:<p>`: the transcript protocol it speaks.
// Sorted, no repeats: the same process always declares the same strings.
import agentPackage from '../../package.json' with { type: 'json' };
import { AGENT_PROTOCOL, manifestBasisOf } from '../record/identity.js';

/** This build of the agent service: `@everdict/agent@<version>`. */
export const AGENT_BUILD = `${agentPackage.name}@${agentPackage.version}`;

/** What a process speaking `protocol` (default: this build's) declares it can resume. */
export function hostCapabilities(protocol: string = AGENT_PROTOCOL): string[] {
  return [`build:${AGENT_BUILD}`, `manifest:${manifestBasisOf(protocol)}`, `protocol:${protocol}`].sort();
}
