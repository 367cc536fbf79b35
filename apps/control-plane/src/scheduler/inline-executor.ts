// Executes one claimed analysis run in-process with a timeout, then settles it (outputs, record segment).
import { withTx } from '../db/tx.js';
import { isControlPlaneError } from '../errors.js';
import type { Deps } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import { AnalysisFailure, analysisFor } from './analyses.js';

export async function executeInline(
  deps: Deps,
  tenant: string,
  runId: string,
  subject: unknown,
  timeoutMs: number,
): Promise<void> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort('timeout'), timeoutMs);
  let settle: Parameters<typeof transitionTx>[4];
  let extras: Parameters<typeof transitionTx>[5];
  try {
    const { fn, name, config } = analysisFor(subject);
    const out = await Promise.race([
      fn(config, { tenant, runId, db: deps.db, signal: controller.signal }),
      new Promise<never>((_, reject) =>
        controller.signal.addEventListener(
          'abort',
          () => reject(new AnalysisFailure('timeout', `exceeded ${timeoutMs} ms`)),
          { once: true },
        ),
      ),
    ]);
    settle = { type: 'succeed' };
    extras = {
      outputs: { summary: out.summary, result: (out.result ?? null) as never, exitCode: 0 },
      interval: { journal: { analysis: name, out } },
    };
  } catch (e) {
    const code = e instanceof AnalysisFailure ? e.code : 'analysis_error';
    const message = e instanceof Error ? e.message : String(e);
    settle = { type: 'fail', error: { code, message, retryable: code === 'timeout' } };
    extras = { outputs: { exitCode: 1 }, interval: { journal: { error: code }, exitCode: 1 } };
  } finally {
    clearTimeout(timer);
  }
  try {
    await withTx(deps.db, (tx) => transitionTx(tx, deps, tenant, runId, settle, extras));
  } catch (e) {
    // Cancelled (or settled) while it ran: terminal is terminal, the late result is dropped.
    if (!(isControlPlaneError(e) && e.code === 'conflict')) throw e;
  }
}
