// A control plane that stops answering mid-interval (a half-open connection, a hung proxy) on the real control
// plane: every call of HttpControlPlane is bounded by its request timeout, so the interval ends as
// `control_plane_unavailable`, its heartbeat stops and the lease expires — the turn is leased again. Before,
// the call waited forever while the heartbeat kept renewing the lease: the turn was held by nobody working.
// (EVERDICT_LEASE_MS=5000, heartbeats every 1 s: a 5 s lease spans the 3 s hang with room for heartbeats a
// loaded machine delays by seconds — a 1 s lease did not — and, once the heartbeat stops, it is found expired
// within ~6 s. The expiry is what proves the heartbeat stopped, so it is waited for, not forced.)
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { isAgentError } from '../src/errors.js';
import { HttpControlPlane } from '../src/http/http-control-plane.js';
import { workOnce } from '../src/loop/worker.js';
import type { ModelProvider } from '../src/model/provider.js';
import { createAgent, leaseFor, message, type Seat, seat } from './support.js';

let s: Seat;
beforeAll(async () => {
  s = await seat({ EVERDICT_LEASE_MS: '5000' });
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

const answering: ModelProvider = {
  name: 'answering',
  async complete(req) {
    return {
      model: req.model,
      content: 'done',
      toolCalls: [],
      usage: { inputTokens: 1, outputTokens: 1 },
      finishReason: 'stop',
    };
  },
};

const leaseOf = (holder: string, runId: string) => leaseFor(s, holder, runId);

describe('request timeout', () => {
  it('a transcript append that never answers ends the interval; the lease expires and the turn is leased again', async () => {
    const agentId = await createAgent(s, { tools: [] });
    const runId = await message(s, agentId, 'hello');
    onTestFinished(async () => {
      await s.admin.POST('/runs/{id}/cancel', { params: { path: { id: runId } }, body: { reason: 'done' } });
    });
    const cut: string[] = [];
    // The hung requests, held for the test's length. A Request follows its signal's abort only while it lives,
    // and nothing else holds a hung one here (a real fetch's socket would): a GC within the 3 s then dropped the
    // whole chain — the requests, the timeout's listener, the awaiting interval — and the interval never ended
    // (1 run in 4 under load, a 60 s test timeout in CI).
    const hung: Request[] = [];
    // Every transcript append hangs until its request is aborted (the other calls reach the control plane).
    const hanging: typeof fetch = async (input, init) => {
      const req = new Request(input, init);
      if (req.method === 'POST' && req.url.endsWith('/transcript')) {
        if (input instanceof Request) hung.push(input);
        hung.push(req);
        return new Promise<Response>((_, reject) =>
          req.signal.addEventListener('abort', () => {
            cut.push(req.url);
            reject(req.signal.reason);
          }),
        );
      }
      return fetch(req);
    };
    const cp = new HttpControlPlane({
      url: s.cp.url,
      token: s.cp.internalToken,
      fetch: hanging,
      requestTimeoutMs: 3_000,
    });
    const err = await workOnce(
      { controlPlane: cp, provider: () => answering, holder: 'host-hung' },
      2000,
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAgentError(err) && err.code).toBe('control_plane_unavailable');
    expect(cut).toHaveLength(1); // the hung request was cut, not left open
    // Nobody heartbeats the lease now: it expires and another host gets the turn under a new epoch.
    const again = await leaseOf('host-b', runId);
    expect(again.epoch).toBe(2);
    expect(hung.length).toBeGreaterThan(0);
  }, 60_000);
});
