// This build's capability set (host/capabilities.ts): what the agent declares on lease requests and declines.
import { describe, expect, it } from 'vitest';
import agentPackage from '../../package.json' with { type: 'json' };
import { AGENT_PROTOCOL } from '../record/identity.js';
import { AGENT_BUILD, hostCapabilities } from './capabilities.js';

describe('hostCapabilities', () => {
  it('declares the build, the manifest basis and the protocol: sorted, the same every time', () => {
    const caps = hostCapabilities();
    expect(AGENT_BUILD).toBe(`@everdict/agent@${agentPackage.version}`);
    expect(caps).toEqual([...caps].sort());
    expect(caps).toHaveLength(3);
    expect(caps[0]).toBe(`build:${AGENT_BUILD}`);
    expect(caps[1]).toMatch(/^manifest:[0-9a-f]{64}$/);
    expect(caps[2]).toBe(`protocol:${AGENT_PROTOCOL}`);
    expect(hostCapabilities(AGENT_PROTOCOL)).toEqual(caps);
    for (const c of caps) expect(c.length).toBeLessThanOrEqual(200); // the control plane's bound
  });

  it('changes with the protocol — the manifest basis with it — and keeps the build', () => {
    const other = hostCapabilities('everdict-agent/transcript/2');
    expect(other[0]).toBe(`build:${AGENT_BUILD}`);
    expect(other[1]).not.toBe(hostCapabilities()[1]);
    expect(other[2]).toBe('protocol:everdict-agent/transcript/2');
  });
});
