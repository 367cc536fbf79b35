// What an interval makes of what the model and the network hand it, on the real control plane:
// - a turn whose answer is already stored (its `succeeded` report never reached the control plane; the lease
//   expired and the turn was leased again) settles with that answer — the model is not asked, and paid, again;
// - tool-call ids the provider left empty or repeated (some OpenAI-compatible servers do) are made unique
//   before anything is stored or dispatched: the model's output is kept, and no call is mistaken for another;
// - a cancel that arrives mid-model-call reaches the agent within a heartbeat: it stops and reports nothing.
// (EVERDICT_LEASE_MS=60000: a heartbeated lease never expires under a loaded machine. The lost holder's lease
// is ended by revoking it — its leases expire at once and the sweep requeues the turn — not by racing a short
// lease against the next holder's heartbeat.)
import { dataOf } from '@everdict/client';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { HttpControlPlane } from '../src/http/http-control-plane.js';
import { runInterval } from '../src/loop/interval.js';
import { withHeartbeat, workOnce } from '../src/loop/worker.js';
import type { Completion, ModelProvider } from '../src/model/provider.js';
import { Transcript } from '../src/transcript/transcript.js';
import {
  createAgent,
  leaseFor,
  message,
  recordOf,
  revokeHost,
  type Seat,
  seat,
  tenantHost,
} from './support.js';

let s: Seat;
beforeAll(async () => {
  s = await seat({ EVERDICT_LEASE_MS: '60000' });
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

const cancelAfter = (runId: string) =>
  onTestFinished(async () => {
    await s.admin
      .POST('/runs/{id}/cancel', { params: { path: { id: runId } }, body: { reason: 'done' } })
      .catch(() => undefined);
  });

const leaseOf = (holder: string, runId: string) => leaseFor(s, holder, runId);

/** Answers `reply` to every call, counting them. */
function counting(reply: Omit<Completion, 'model' | 'usage' | 'finishReason'>) {
  const seen = { calls: 0 };
  const provider: ModelProvider = {
    name: 'counting',
    async complete(req) {
      seen.calls++;
      return {
        model: req.model,
        ...reply,
        usage: { inputTokens: 3, outputTokens: 2 },
        finishReason: reply.toolCalls.length ? 'tool_calls' : 'stop',
      };
    },
  };
  return { provider, seen };
}

describe('interval recovery', () => {
  it('a turn leased again after its answer was stored settles with that answer, without a second model call', async () => {
    const agentId = await createAgent(s, { tools: [] });
    const runId = await message(s, agentId, 'hello');
    cancelAfter(runId);
    const { provider, seen } = counting({ content: 'the answer', toolCalls: [] });
    // Every report meets a reset connection (the control plane restarting): the answer is stored, the
    // `succeeded` report is not.
    const resetting: typeof fetch = async (input, init) => {
      const req = new Request(input, init);
      if (req.method === 'POST' && req.url.endsWith('/internal/agent-run-events'))
        throw new TypeError('fetch failed (injected reset)');
      return fetch(req);
    };
    const cp = new HttpControlPlane({ url: s.cp.url, token: s.cp.internalToken, fetch: resetting });
    const hostA = await tenantHost(s, 'host-a');
    onTestFinished(hostA.cleanup);
    const err = await workOnce(
      { controlPlane: cp, provider: () => provider, holder: hostA.hostId, signer: hostA.signer },
      2000,
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAgentError(err) && err.code).toBe('control_plane_unavailable');
    expect(seen.calls).toBe(1);
    // Host A is gone: its lease expires and the sweep requeues the turn (a lost execution); another host gets it.
    expect(await revokeHost(s, hostA.hostId)).toEqual([runId]);
    const again = await leaseOf('host-b', runId);
    expect(again.epoch).toBe(2);
    const out = await withHeartbeat(s.agents, 'host-b', again, (signal) =>
      runInterval(again, { controlPlane: s.agents, provider: () => provider, holder: 'host-b', signal }),
    );
    expect(out).toEqual({ result: 'succeeded', runId, summary: 'the answer' });
    expect(seen.calls).toBe(1);
    const run = dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id: runId } } }));
    expect(run.status).toBe('succeeded');
    const stored = await Transcript.load(s.agents, runId);
    expect(stored.events.filter((e) => e.type === 'llm_call')).toHaveLength(1);
    expect(stored.events.filter((e) => e.type === 'message' && e.role === 'assistant')).toHaveLength(1);
  }, 60_000);

  it('empty and repeated tool-call ids are made unique: every call is stored, dispatched and awaited', async () => {
    const agentId = await createAgent(s, { tools: ['ask_approval'] });
    const runId = await message(s, agentId, 'ask three times');
    cancelAfter(runId);
    const ask = (question: string, callId: string) => ({
      callId,
      tool: 'ask_approval',
      argumentsJson: JSON.stringify({ question }),
    });
    const { provider } = counting({
      content: 'asking',
      toolCalls: [ask('first?', ''), ask('second?', 'dup'), ask('third?', 'dup')],
    });
    const lease = await leaseOf('host-ids', runId);
    const out = await withHeartbeat(s.agents, 'host-ids', lease, (signal) =>
      runInterval(lease, { controlPlane: s.agents, provider: () => provider, holder: 'host-ids', signal }),
    );
    if (out === 'lost') throw new Error('the lease was lost');
    expect(out.result).toBe('parked');
    const outstanding = out.result === 'parked' ? out.outstanding : [];
    expect(outstanding).toHaveLength(3);
    expect(new Set(outstanding).size).toBe(3);
    expect(outstanding).toContain('dup');
    const input = dataOf(await s.admin.GET('/runs/{id}/input', { params: { path: { id: runId } } }));
    const pending = input.pending as { callId: string; prompt?: string }[];
    expect(pending.map((p) => p.callId).sort()).toEqual([...outstanding].sort());
    expect(pending.map((p) => p.prompt).sort()).toEqual(['first?', 'second?', 'third?']);
  }, 60_000);
});

describe('a turn cancelled mid-interval', () => {
  it('cancelling a turn mid-interval reaches the agent within a heartbeat: it stops, reports nothing', async () => {
    const agentId = await createAgent(s, { tools: ['ask_approval'] });
    const runId = await message(s, agentId, 'think hard');
    let calling!: () => void;
    const called = new Promise<void>((r) => {
      calling = r;
    });
    // A model that answers only when its request is aborted (the lease lost): the interval is mid-call.
    const stuck: ModelProvider = {
      name: 'stuck',
      complete: (req) =>
        new Promise((_, reject) => {
          calling();
          req.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        }),
    };
    const working = workOnce({ controlPlane: s.agents, provider: () => stuck, holder: 'h', slots: 1 }, 5000);
    await called;
    // Held under its heartbeat until now (not lost to an expiry): what stops it next is the cancel.
    expect(dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id: runId } } })).status).toBe(
      'running',
    );
    await s.admin.POST('/runs/{id}/cancel', { params: { path: { id: runId } }, body: { reason: 'stop' } });
    const [out] = await working;
    expect(out).toEqual({ result: 'lost', runId });
    const { verify } = await recordOf(s, runId);
    expect(verify).toMatchObject({ ok: true, phase: 'closed' });
  }, 120_000);
});
