// The inline lane's registry: pure, in-process analysis functions (no shell, no user code). Each gets its
// config, a read-only view of the tenant's ledger and an abort signal; it returns outputs + a summary.
import { sql } from 'kysely';
import { numeric } from '../db/numeric.js';
import type { Db } from '../db/tx.js';

export interface AnalysisContext {
  tenant: string;
  runId: string;
  db: Db;
  signal: AbortSignal;
}
export interface AnalysisResult {
  summary: string;
  result?: unknown;
}
export type Analysis = (config: Record<string, unknown>, ctx: AnalysisContext) => Promise<AnalysisResult>;

export class AnalysisFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new AnalysisFailure('aborted', 'aborted'));
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(new AnalysisFailure('aborted', String(signal.reason ?? 'aborted')));
      },
      { once: true },
    );
  });

export const ANALYSES: Record<string, Analysis> = {
  echo: async (c) => ({ summary: String(c.message ?? 'echo'), result: c.value ?? c.message ?? null }),
  sleep: async (c, ctx) => {
    const ms = Math.min(Number(c.ms ?? 10), 60_000);
    await sleep(ms, ctx.signal);
    return { summary: `slept ${ms} ms`, result: { ms } };
  },
  fail: async (c) => {
    throw new AnalysisFailure(String(c.code ?? 'analysis_failed'), String(c.message ?? 'failed on purpose'));
  },
  count_runs: async (c, ctx) => {
    let q = ctx.db
      .selectFrom('runs')
      .select(['status', sql<string>`count(*)`.as('n')])
      .where('tenant_id', '=', ctx.tenant)
      .where('id', '!=', ctx.runId);
    if (typeof c.kind === 'string') q = q.where('kind', '=', c.kind);
    const rows = await q.groupBy('status').execute();
    const byStatus = Object.fromEntries(rows.map((r) => [r.status, numeric(r.n)]));
    const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
    return { summary: `${total} runs`, result: { total, byStatus } };
  },
};

/** The function an analysis subject names: `{config: {fn, …}}`; a `{viewId}` runs count_runs. */
export function analysisFor(subject: unknown): {
  fn: Analysis;
  name: string;
  config: Record<string, unknown>;
} {
  const s = (subject ?? {}) as { config?: Record<string, unknown>; viewId?: string };
  const config = s.config ?? { fn: 'count_runs', viewId: s.viewId };
  const name = typeof config.fn === 'string' ? config.fn : 'count_runs';
  const fn = ANALYSES[name];
  if (!fn) throw new AnalysisFailure('unknown_analysis', `no inline analysis named ${name}`);
  return { fn, name, config };
}
