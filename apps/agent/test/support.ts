// Test support: a REAL control plane (the built apps/control-plane/dist/main.js as a child process, an
// embedded PGlite ledger in a fresh directory — @everdict/client/testing), its admin API through the typed
// client, and the agent service's seat of the port over HTTP with the service token.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, dataOf, type EverdictClient } from '@everdict/client';
import { pairingSignature } from '@everdict/client/host-identity';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { generateSigningKey } from '@everdict/runrecord';
import type { TurnLease } from '../src/control-plane.js';
import { type HostIdentity, hostIdentity, pairHost } from '../src/host/pairing.js';
import { HttpControlPlane } from '../src/http/http-control-plane.js';
import type { ModelProvider } from '../src/model/provider.js';

export interface Seat {
  readonly cp: ControlPlaneProcess;
  /** The tenant admin's client (API key). */
  readonly admin: EverdictClient;
  /** The agent service's port (service token). */
  readonly agents: HttpControlPlane;
  stop(): Promise<void>;
}

export async function seat(env: Record<string, string> = {}): Promise<Seat> {
  const cp = await startControlPlane({ env });
  return {
    cp,
    admin: createClient({ baseUrl: cp.url, token: cp.apiKey }),
    agents: new HttpControlPlane({ url: cp.url, token: cp.internalToken, pollMs: 25 }),
    stop: () => cp.stop(),
  };
}

export const PRICING = { inputUsdPerMTok: 3, outputUsdPerMTok: 15 };

export async function createAgent(
  s: Seat,
  body: {
    tools: ('run_command' | 'start_experiment' | 'read_run' | 'ask_approval')[];
    envelope?: Record<string, number>;
  },
): Promise<string> {
  const out = dataOf(
    await s.admin.POST('/agents', {
      body: {
        name: 'releaser',
        model: 'scripted-test',
        systemPrompt: 'You ship releases and ask before you do.',
        tools: body.tools,
        envelope: body.envelope ?? { usd: 5 },
        pricing: PRICING,
      },
    }),
  );
  return out.agent.id;
}

/** A conversation with the agent and one message: the queued turn's run id. */
export async function message(s: Seat, agentId: string, text: string): Promise<string> {
  const conv = dataOf(await s.admin.POST('/conversations', { body: { agentId } }));
  const turn = dataOf(
    await s.admin.POST('/conversations/{id}/messages', {
      params: { path: { id: conv.group.id } },
      body: { text },
    }),
  );
  return turn.run.id;
}

/** The run's record as the control plane verifies it on read. */
export async function recordOf(s: Seat, runId: string) {
  return dataOf(await s.admin.GET('/runs/{id}/record', { params: { path: { id: runId } } }));
}

/** A runner registered for `kinds` (default `command`) runs, so they are placeable (it never leases: they stay queued). */
export async function pairCommandRunner(s: Seat, kinds: ('command' | 'eval')[] = ['command']): Promise<void> {
  const { token } = dataOf(await s.admin.POST('/runners/pairing-tokens', { body: {} }));
  const key = generateSigningKey(randomBytes(32));
  await s.admin.POST('/runners/pair', {
    body: {
      token,
      publicKey: key.publicKey,
      signature: pairingSignature(key, token),
      name: 'idle-runner',
      capabilities: { drivers: ['process'], kinds, images: ['*'], slots: 1 },
    },
  });
}

/**
 * An agent host of the tenant (paired with its admin's pairing token, so the admin may revoke it), its state in
 * a fresh directory removed by `cleanup`.
 */
export async function tenantHost(
  s: Seat,
  name: string,
): Promise<HostIdentity & { cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'agent-tenant-host-'));
  const { token } = dataOf(await s.admin.POST('/runners/pairing-tokens', { body: {} }));
  await pairHost({ url: s.cp.url, token, name, dir });
  const host = await hostIdentity({ url: s.cp.url, dir, name });
  if (!host) throw new Error(`host ${name} did not pair`);
  return { ...host, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Revokes `host` — the holder is gone for good: its leases expire at once and the sweep moves their turns
 * (the lease rule's expiry, without waiting out a lease period) — and answers the turns it requeued.
 */
export async function revokeHost(s: Seat, hostId: string): Promise<string[]> {
  const out = dataOf(await s.admin.POST('/agents/hosts/{id}/revoke', { params: { path: { id: hostId } } }));
  return out.requeued;
}

/**
 * The lease of `runId` for `holder`, asked for until the control plane grants it (about 2 min at most);
 * `capabilities`: what the holder declares (default: this build's).
 */
export async function leaseFor(
  s: Seat,
  holder: string,
  runId: string,
  capabilities?: readonly string[],
): Promise<TurnLease> {
  for (let i = 0; ; i++) {
    const leases = await s.agents.lease({
      free: 1,
      holder,
      waitMs: 2000,
      ...(capabilities ? { capabilities } : {}),
    });
    const hit = leases.find((l) => l.runId === runId);
    if (hit) return hit;
    if (i > 60) throw new Error(`no lease on ${runId} for ${holder}`);
  }
}

/** A model that asks for approval once (`ask_approval`), then answers. */
export const asking: ModelProvider = {
  name: 'asking',
  async complete(req) {
    const asked = req.messages.some((m) => m.role === 'tool');
    return {
      model: req.model,
      content: asked ? 'shipped' : 'may I?',
      toolCalls: asked
        ? []
        : [
            {
              callId: 'call_ask',
              tool: 'ask_approval',
              argumentsJson: JSON.stringify({ question: 'ship?' }),
            },
          ],
      usage: { inputTokens: 1, outputTokens: 1 },
      finishReason: 'stop',
    };
  },
};
