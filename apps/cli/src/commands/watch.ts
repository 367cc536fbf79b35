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

/** Events one trajectory stream sends before it ends `{status: "limit"}` (the control plane's default `limit`). */
export const TRAJECTORY_PAGE = 10_000;

/**
 * Tails the trajectory from event `from`, each event to `print` (one line on stdout), until sealed or `signal`
 * aborts; resolves with the offset after the last event it printed (where a later tail of the same run goes on).
 * The stream ends after a page of events (`end` `{status: "limit"}`) and may drop: either way it is reopened after
 * the last event it sent (`offset`), a drop after a pause (Backoff) — nothing skipped, nothing twice. A refusal
 * (4xx) or an `error` event ends the tail with a line on stderr.
 */
export async function followTrajectory(
  ctx: Context,
  id: string,
  signal: AbortSignal,
  print: (id: string | undefined, data: string) => void = (eid, data) =>
    line(ctx.io.stdout, describeTraceEvent(eid, data)),
  from = 0,
): Promise<number> {
  const base = `${ctx.url}/runs/${encodeURIComponent(id)}/trajectory/stream`;
  const backoff = new Backoff();
  let offset = from;
  while (!signal.aborted) {
    let end: string | undefined;
    try {
      const url = offset === 0 ? base : `${base}?offset=${offset}`;
      for await (const e of streamEvents(url, ctx.key, signal, requestTimeoutMs(ctx.io.env))) {
        if (e.event === 'end') {
          end = endStatus(e.data) ?? 'sealed';
          break;
        }
        if (e.event === 'error') {
          line(ctx.io.stderr, `trajectory: ${e.data}`);
          return offset;
        }
        if (e.event !== 'trajectory.event') continue;
        backoff.reset();
        if (e.id !== undefined && /^\d+$/.test(e.id)) offset = Number(e.id) + 1;
        print(e.id, e.data);
      }
      if (end === 'limit') continue; // the next page, at once
      if (end !== undefined || signal.aborted) return offset; // sealed, or the run ended without a trajectory
      // Closed without an `end` (a draining control plane, a proxy): reopened after a pause.
      await pause(backoff.delay(), signal);
    } catch (err) {
      if (signal.aborted) return offset;
      if (!transient(err)) {
        line(ctx.io.stderr, `trajectory unavailable: ${(err as Error).message}`);
        return offset;
      }
      await pause(backoff.delay((err as ClientError).retryAfterSeconds), signal);
    }
  }
  return offset;
}

function endStatus(data: string): string | undefined {
  try {
    return (JSON.parse(data) as { status?: string }).status;
  } catch {
    return undefined;
  }
}

/** A trajectory event's JSON as an object, or null when it is not one. */
export function parseTraceEvent(data: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(data);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A value as one line of JSON, cut at `max` characters. */
export function brief(v: unknown, max = 200): string {
  const text = JSON.stringify(v) ?? 'null';
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** One line for an event: its id, its type, the rest of it as JSON (cut at 200 characters). */
export function describeEvent(id: string | undefined, ev: Record<string, unknown>): string {
  const type = String(ev.type ?? 'event');
  const body = Object.fromEntries(
    Object.entries(ev).filter(([k]) => !['type', 'ts', 'runId', 'seq', 'at'].includes(k)),
  );
  return `${(id ?? '?').padStart(4)} ${type} ${brief(body)}`;
}

/**
 * A `followTrajectory` printer over event objects: each one the stream sends to `print`; what is not an event
 * object, shown as it came.
 */
export function eventPrinter(
  ctx: Context,
  print: (ev: Record<string, unknown>) => void,
): (id: string | undefined, data: string) => void {
  return (id, data) => {
    const ev = parseTraceEvent(data);
    if (ev) print(ev);
    else line(ctx.io.stdout, describeTraceEvent(id, data));
  };
}

/** One line for an event as the stream sent it; what is not an event object is shown as it came. */
export function describeTraceEvent(id: string | undefined, data: string): string {
  const ev = parseTraceEvent(data);
  return ev ? describeEvent(id, ev) : `${id ?? '?'} ${data}`;
}
