// Waiting on a run: its facts over SSE (`GET /runs/:id/events`, which ends when the run settles), and
// its trajectory tailed over SSE (`GET /runs/:id/trajectory/stream`, which ends once sealed).
import { ClientError } from '@everdict/client';
import { Backoff, pause } from '../backoff.js';
import { type Context, reportingCall, requestTimeoutMs } from '../context.js';
import { line } from '../io.js';
import { streamEvents } from '../sse.js';

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

export interface RunSummary {
  id: string;
  kind: string;
  status: string;
  outputs?: unknown;
  error?: unknown;
}

/** The run as it is now; asked again when Ctrl-C cut the call (a wait reports where it stopped). */
export async function getRun(ctx: Context, id: string): Promise<RunSummary> {
  return reportingCall(ctx.io, () => ctx.call<RunSummary>('GET', `/runs/${encodeURIComponent(id)}`));
}

/** A failure worth another attempt: no answer, a 5xx, or 429 (a 4xx refusal is final). */
function transient(e: unknown): e is ClientError {
  return e instanceof ClientError && (e.status === 0 || e.status >= 500 || e.status === 429);
}

/**
 * Resolves with the run once it is terminal (or, after `signal` aborts, as it is then); prints each fact to
 * stderr when `verbose`. A dropped stream is reopened after a pause (Backoff: 250 ms doubling to 5 s, reset
 * by a good connection — one that delivered an event or stayed open 5 s; a Retry-After honoured); a stream
 * or run that has had no answer for EVERDICT_REQUEST_TIMEOUT_MS fails with the last error. A refusal (4xx)
 * fails at once.
 */
export async function waitSettled(
  ctx: Context,
  id: string,
  opts: { verbose?: boolean; signal?: AbortSignal } = {},
): Promise<RunSummary> {
  const url = `${ctx.url}/runs/${encodeURIComponent(id)}/events`;
  const backoff = new Backoff();
  const giveUpMs = requestTimeoutMs(ctx.io.env);
  let troubleSince: number | null = null;
  let said = false;
  for (;;) {
    const opened = Date.now();
    let good = false;
    let failure: ClientError | undefined;
    try {
      for await (const e of streamEvents(url, ctx.key, opts.signal, giveUpMs)) {
        good = true;
        if (e.event === 'end') break;
        if (opts.verbose) line(ctx.io.stderr, `· ${e.event}`);
      }
      if (Date.now() - opened >= backoff.maxMs) good = true;
      const run = await getRun(ctx, id);
      if (TERMINAL.has(run.status) || opts.signal?.aborted) return run;
    } catch (e) {
      if (opts.signal?.aborted || !transient(e)) throw e;
      failure = e;
    }
    if (good) {
      backoff.reset();
      troubleSince = null;
      said = false;
    } else {
      troubleSince ??= opened;
      if (failure && Date.now() - troubleSince >= giveUpMs) throw failure;
    }
    if (failure && !said) {
      line(ctx.io.stderr, `${id}: ${failure.message}; reconnecting`);
      said = true;
    }
    await pause(backoff.delay(failure?.retryAfterSeconds), opts.signal);
  }
}

/** Tails the trajectory, one line per event on stdout, until sealed or `signal` aborts. */
export async function followTrajectory(ctx: Context, id: string, signal: AbortSignal): Promise<number> {
  const url = `${ctx.url}/runs/${encodeURIComponent(id)}/trajectory/stream`;
  let n = 0;
  try {
    for await (const e of streamEvents(url, ctx.key, signal, requestTimeoutMs(ctx.io.env))) {
      if (e.event === 'end') break;
      if (e.event === 'error') {
        line(ctx.io.stderr, `trajectory: ${e.data}`);
        break;
      }
      if (e.event !== 'trajectory.event') continue;
      n++;
      line(ctx.io.stdout, describeTraceEvent(e.id, e.data));
    }
  } catch (err) {
    if (!signal.aborted) line(ctx.io.stderr, `trajectory unavailable: ${(err as Error).message}`);
  }
  return n;
}

export function describeTraceEvent(id: string | undefined, data: string): string {
  let ev: Record<string, unknown>;
  try {
    ev = JSON.parse(data) as Record<string, unknown>;
  } catch {
    return `${id ?? '?'} ${data}`;
  }
  const type = String(ev.type ?? 'event');
  const body = Object.fromEntries(
    Object.entries(ev).filter(([k]) => !['type', 'ts', 'runId', 'seq', 'at'].includes(k)),
  );
  const text = JSON.stringify(body);
  return `${(id ?? '?').padStart(4)} ${type} ${text.length > 200 ? `${text.slice(0, 197)}...` : text}`;
}
