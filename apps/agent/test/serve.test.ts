// The agent service's loop (`serve`) on the real control plane: a failed lease request — a reset connection,
// a 503 while the control plane drains — is retried, not fatal (before, one failure ended the service, and
// with it `pnpm start`); a slot is leased again as soon as its interval ends, so a slow turn does not hold up
// the turns behind it; stopping waits for the running intervals.
import { dataOf } from '@everdict/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpControlPlane } from '../src/http/http-control-plane.js';
import { type LeaseOutcome, serve } from '../src/loop/worker.js';
import type { Completion, CompletionRequest, ModelProvider } from '../src/model/provider.js';
import { createAgent, message, type Seat, seat } from './support.js';

let s: Seat;
beforeAll(async () => {
  s = await seat();
}, 300_000);
afterAll(async () => {
  await s?.stop();
});

/** Answers at once, except a turn whose message says `slow`: that one waits for `release()`. */
function gatedProvider() {
  let release = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const provider: ModelProvider = {
    name: 'gated',
    async complete(req: CompletionRequest): Promise<Completion> {
      const slow = req.messages.some((m) => m.role === 'user' && m.content.includes('slow'));
      if (slow) await gate;
      return {
        model: req.model,
        content: slow ? 'slow done' : 'done',
        toolCalls: [],
        usage: { inputTokens: 10, outputTokens: 2 },
        finishReason: 'stop',
      };
    },
  };
  return { provider, release };
}

/** The outcomes `serve` reports, and a wait for one run's. */
function outcomes() {
  const seen = new Map<string, LeaseOutcome>();
  const waiters = new Map<string, (o: LeaseOutcome) => void>();
  return {
    seen,
    onOutcome(o: LeaseOutcome) {
      seen.set(o.runId, o);
      waiters.get(o.runId)?.(o);
    },
    of(runId: string): Promise<LeaseOutcome> {
      const known = seen.get(runId);
      return known ? Promise.resolve(known) : new Promise((r) => waiters.set(runId, r));
    },
  };
}

describe('serve', () => {
  it('retries failed lease requests (reset connection, 503) and goes on working', async () => {
    let leaseCalls = 0;
    const flaky: typeof fetch = async (input, init) => {
      const req = new Request(input, init);
      if (req.url.endsWith('/internal/agent/v1/leases')) {
        leaseCalls += 1;
        if (leaseCalls <= 2) throw new TypeError('fetch failed'); // a reset connection
        if (leaseCalls === 3)
          return new Response(JSON.stringify({ code: 'shutting_down', title: 'draining', status: 503 }), {
            status: 503,
            headers: { 'content-type': 'application/problem+json' },
          });
      }
      return fetch(req);
    };
    const cp = new HttpControlPlane({ url: s.cp.url, token: s.cp.internalToken, pollMs: 25, fetch: flaky });
    const agentId = await createAgent(s, { tools: [] });
    const runId = await message(s, agentId, 'hello');
    const { provider } = gatedProvider();
    const errors: unknown[] = [];
    const out = outcomes();
    const stop = new AbortController();
    const serving = serve(
      {
        controlPlane: cp,
        provider: () => provider,
        holder: 'serve-flaky',
        signal: stop.signal,
        waitMs: 2_000,
        retryMs: 10,
        onError: (e) => errors.push(e),
      },
      out.onOutcome,
    );
    expect(await out.of(runId)).toMatchObject({ result: 'succeeded', runId });
    stop.abort();
    await serving;
    expect(errors).toHaveLength(3);
    const run = dataOf(await s.admin.GET('/runs/{id}', { params: { path: { id: runId } } }));
    expect(run.status).toBe('succeeded');
  }, 120_000);

  it('leases into a freed slot while a slow turn still runs; stopping waits for it', async () => {
    const agentId = await createAgent(s, { tools: [] });
    const slowRun = await message(s, agentId, 'slow');
    const quickRun = await message(s, agentId, 'quick');
    const { provider, release } = gatedProvider();
    const out = outcomes();
    const stop = new AbortController();
    const serving = serve(
      {
        controlPlane: s.agents,
        provider: () => provider,
        holder: 'serve-slots',
        slots: 2,
        signal: stop.signal,
        waitMs: 2_000,
      },
      out.onOutcome,
    );
    expect(await out.of(quickRun)).toMatchObject({ result: 'succeeded' });
    // The quick turn's slot is free again while the slow one still runs: a turn queued now is leased and
    // finishes (with one batch at a time, it would wait for the slow turn).
    const laterRun = await message(s, agentId, 'later');
    expect(await out.of(laterRun)).toMatchObject({ result: 'succeeded' });
    expect(out.seen.has(slowRun)).toBe(false);
    stop.abort();
    release();
    await serving;
    // Stopping waited for the slow interval: its outcome was reported before serve returned.
    expect(out.seen.get(slowRun)).toMatchObject({ result: 'succeeded' });
  }, 120_000);
});
