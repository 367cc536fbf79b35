// The steps the agent tests take against the real app, written once: pair a host, start a turn, lease turns,
// and run a turn's first interval to a ready park (it asks for approval, parks, the approval arrives).
import { expect } from 'vitest';
import { ADMIN_KEY, call, callInternal, type Fetcher } from './harness.js';
import { agentHostPairingProof } from './runners.js';

export type TurnLease = { runId: string; epoch: number };

/** The manifest and transcript addresses a ready park names. */
export const PARK_MANIFEST = 'c'.repeat(64);
export const PARK_TRANSCRIPT = 'a'.repeat(64);

/** A paired agent host of the tenant whose admin key is `key`: its host id (its lease holder name). */
export async function pairAgentHost(app: Fetcher, name: string, key = ADMIN_KEY): Promise<string> {
  const minted = await call(app, 'POST', '/runners/pairing-tokens', { key, body: {} });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  const token = String(minted.body.token);
  const paired = await call(app, 'POST', '/agents/hosts/pair', {
    key: null,
    body: { token, ...agentHostPairingProof(token), name },
  });
  expect(paired.status, JSON.stringify(paired.body)).toBe(201);
  return paired.body.hostId as string;
}

/** A conversation with a scripted agent (that asks for approval, by default): the run of its first message (a turn). */
export async function startAgentTurn(
  app: Fetcher,
  name: string,
  key = ADMIN_KEY,
  tools: string[] = ['ask_approval'],
): Promise<string> {
  const a = await call(app, 'POST', '/agents', {
    key,
    body: { name, model: 'scripted', tools },
  });
  expect(a.status, JSON.stringify(a.body)).toBe(201);
  const agentId = (a.body.agent as { id: string }).id;
  const conv = await call(app, 'POST', '/conversations', { key, body: { agentId } });
  const convId = (conv.body.group as { id: string }).id;
  const msg = await call(app, 'POST', `/conversations/${convId}/messages`, { key, body: { text: 'go' } });
  expect(msg.status).toBe(202);
  return (msg.body.run as { id: string }).id;
}

/** The turns `holder` is offered (`capabilities` as its lease request declares them). */
export async function leaseTurns(
  app: Fetcher,
  holder: string,
  { free = 8, capabilities }: { free?: number; capabilities?: string[] } = {},
): Promise<TurnLease[]> {
  const r = await callInternal(app, 'POST', '/internal/agent/v1/leases', {
    holder,
    free,
    ...(capabilities ? { capabilities } : {}),
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.leases as TurnLease[];
}

/** The one turn `holder` is offered; throws when none is. */
export async function leaseOneTurn(app: Fetcher, holder: string): Promise<TurnLease> {
  const [lease] = await leaseTurns(app, holder, { free: 1 });
  if (!lease) throw new Error('no lease offered');
  return lease;
}

/**
 * Runs the turn's first interval under `lease`: it asks for approval, parks, and the approval arrives (from the
 * tenant's admin `key`).
 */
export async function parkReady(
  app: Fetcher,
  lease: TurnLease,
  holder: string,
  { tenant = 'default', key = ADMIN_KEY }: { tenant?: string; key?: string } = {},
) {
  await askApproval(app, lease, holder, tenant);
  await parkTurn(app, lease, holder, ['call_1'], tenant);
  const answered = await call(app, 'POST', `/runs/${lease.runId}/input`, {
    key,
    body: { callId: 'call_1', approved: true },
  });
  expect(answered.status, JSON.stringify(answered.body)).toBe(200);
}

/** Reports the turn leased by `lease` parked (`awaiting_input`), waiting on the calls `dispatched`. */
export async function parkTurn(
  app: Fetcher,
  lease: TurnLease,
  holder: string,
  dispatched: string[],
  tenant = 'default',
): Promise<void> {
  const parked = await callInternal(
    app,
    'POST',
    '/internal/agent-run-events',
    {
      runId: lease.runId,
      event: 'awaiting_input',
      holder,
      epoch: lease.epoch,
      transcript: PARK_TRANSCRIPT,
      transcriptBytes: 100,
      manifest: PARK_MANIFEST,
      account: { dispatched, resolved: [] },
    },
    tenant,
  );
  expect(parked.status, JSON.stringify(parked.body)).toBe(200);
}

/** The turn leased by `lease` asks for approval (call `call_1`). */
export async function askApproval(app: Fetcher, lease: TurnLease, holder: string, tenant = 'default') {
  const asked = await callInternal(
    app,
    'POST',
    `/internal/agent/v1/runs/${lease.runId}/calls`,
    { holder, epoch: lease.epoch, callId: 'call_1', tool: 'ask_approval', input: { question: 'ok?' } },
    tenant,
  );
  expect(asked.status, JSON.stringify(asked.body)).toBe(201);
}
