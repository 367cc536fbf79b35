// GET /runs/:id/events as Server-Sent Events: replay the run's past facts from the outbox, then tail
// the service's live feed. Event ids are outbox positions, so a client that reconnects with
// Last-Event-ID resumes exactly after the last fact it saw. The stream ends when the run settles,
// when the client goes away, when the process starts draining, or when the caller's key is revoked (an
// `error` event `{code: "unauthorized"}` first, auth/revocation.ts).

import { isTerminalStatus } from '@everdict/run-model';
import { anySignal } from 'any-signal';
import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import { revokedEvent, watchRevocation } from '../auth/revocation.js';
import type { RunView } from '../ledger/views.js';
import type { EventView, Principal } from '../services/types.js';
import type { RouteDeps } from './deps.js';
import type { AppEnv } from './env.js';
import { FeedBuffer } from './feed-buffer.js';

export function wantsEventStream(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/event-stream\b/i.test(accept);
}

/** The fact that settles a run: `run.settled` (run-model's terminal fact, `data.outcome`). */
export function isTerminalFact(e: EventView): boolean {
  return e.kind === 'run.settled';
}

const position = (id: string): bigint => (/^\d{1,19}$/.test(id) ? BigInt(id) : -1n);

export async function streamRunEvents(
  c: Context<AppEnv>,
  deps: RouteDeps,
  principal: Principal,
  runId: string,
  after: string | undefined,
): Promise<Response> {
  // Resolve the run first: an unknown (or another tenant's) run is a 404 problem, not an empty stream.
  const run = await deps.services.runs.get(principal, runId);

  return streamSSE(c, async (stream) => {
    const revocation = watchRevocation(c);
    try {
      await runStream(stream, deps, principal, runId, after, run, revocation.signal);
    } finally {
      revocation.stop();
    }
    if (revocation.signal.aborted) await stream.writeSSE(revokedEvent);
  });
}

async function runStream(
  stream: SSEStreamingApi,
  deps: RouteDeps,
  principal: Principal,
  runId: string,
  after: string | undefined,
  run: RunView,
  revoked: AbortSignal,
): Promise<void> {
  const { services, lifecycle, heartbeatMs } = deps;
  let last = after ?? '0';
  let settled = false;
  const send = async (e: EventView) => {
    if (position(e.id) <= position(last)) return; // replay and live feed may overlap
    last = e.id;
    await stream.writeSSE({ id: e.id, event: e.kind, data: JSON.stringify(e) });
    if (isTerminalFact(e)) settled = true;
  };

  // 1. Replay what already happened.
  for (;;) {
    if (revoked.aborted) return;
    const page = await services.runs.events(principal, runId, { after: last, limit: 500 });
    for (const e of page.items) await send(e);
    if (!page.nextCursor || page.items.length === 0) break;
  }
  // The run was read before the replay, and its facts are written with its transitions: a run
  // already settled has nothing left to say.
  if (settled || isTerminalStatus(run.status)) {
    await stream.writeSSE({ event: 'end', data: JSON.stringify({ runId, status: 'settled' }) });
    return;
  }

  // 2. Tail the live feed until the run settles, the client leaves, or we drain.
  const markSettled = () => {
    settled = true;
  };
  // Joined for this stream only (lifecycle.ts `poll`: `AbortSignal.any` would keep it as long as the process).
  const shutdown = anySignal([lifecycle.signal, revoked]);
  try {
    await tail(
      stream,
      deps,
      principal,
      runId,
      () => last,
      send,
      () => settled,
      markSettled,
      shutdown,
      heartbeatMs,
    );
  } finally {
    shutdown.clear();
  }
  if (settled) await stream.writeSSE({ event: 'end', data: JSON.stringify({ runId, status: 'settled' }) });
}

async function tail(
  stream: SSEStreamingApi,
  deps: RouteDeps,
  principal: Principal,
  runId: string,
  last: () => string,
  send: (e: EventView) => Promise<void>,
  settled: () => boolean,
  markSettled: () => void,
  shutdown: AbortSignal,
  heartbeatMs: number,
): Promise<void> {
  const buffer = new FeedBuffer();
  const { poke } = buffer;
  const sub = buffer.feed(
    await deps.services.events.subscribe(principal, { runId, after: last() }, buffer.push),
  );
  stream.onAbort(poke);
  shutdown.addEventListener('abort', poke, { once: true });
  try {
    while (!settled() && !stream.aborted && !stream.closed && !shutdown.aborted) {
      const next = buffer.shift();
      if (next) {
        await send(next);
        continue;
      }
      const timedOut = await buffer.idle(heartbeatMs);
      if (!timedOut) continue;
      await stream.write(': keep-alive\n\n');
      // Belt and braces for facts whose names we do not recognise: a quiet, settled run ends the stream.
      const run = await deps.services.runs.get(principal, runId);
      if (isTerminalStatus(run.status) && buffer.length === 0) {
        const rest = await deps.services.runs.events(principal, runId, { after: last(), limit: 500 });
        for (const e of rest.items) await send(e);
        markSettled();
      }
    }
  } finally {
    shutdown.removeEventListener('abort', poke);
    await sub.close();
  }
}
