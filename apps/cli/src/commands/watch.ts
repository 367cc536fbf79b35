// Waiting on a run: its facts over SSE (`GET /runs/:id/events`, which ends when the run settles), and
// its trajectory tailed over SSE (`GET /runs/:id/trajectory/stream`, which ends once sealed).
import type { Context } from '../context.js';
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

export async function getRun(ctx: Context, id: string): Promise<RunSummary> {
  return ctx.call<RunSummary>('GET', `/runs/${encodeURIComponent(id)}`);
}

/** Resolves with the run once it is terminal; prints each fact to stderr when `verbose`. */
export async function waitSettled(
  ctx: Context,
  id: string,
  opts: { verbose?: boolean; signal?: AbortSignal } = {},
): Promise<RunSummary> {
  const url = `${ctx.url}/runs/${encodeURIComponent(id)}/events`;
  for (;;) {
    for await (const e of streamEvents(url, ctx.key, opts.signal)) {
      if (e.event === 'end') break;
      if (opts.verbose) line(ctx.io.stderr, `· ${e.event}`);
    }
    const run = await getRun(ctx, id);
    if (TERMINAL.has(run.status) || opts.signal?.aborted) return run;
  }
}

/** Tails the trajectory, one line per event on stdout, until sealed or `signal` aborts. */
export async function followTrajectory(ctx: Context, id: string, signal: AbortSignal): Promise<number> {
  const url = `${ctx.url}/runs/${encodeURIComponent(id)}/trajectory/stream`;
  let n = 0;
  try {
    for await (const e of streamEvents(url, ctx.key, signal)) {
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
