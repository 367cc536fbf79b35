// Executes one claimed analysis run in-process with a timeout; its result is settled by the SettleBatcher
// (outputs, record segments, outbox, admission slot), together with whatever else finished meanwhile.
import type { Deps } from '../services/context.js';
import { AnalysisFailure, analysisFor } from './analyses.js';
import type { Finished } from './batch-transitions.js';

export async function executeInline(
  deps: Deps,
  tenant: string,
  runId: string,
  subject: unknown,
  timeoutMs: number,
  /** Aborted when the run stops running meanwhile (cancelled): the analysis stops, its result is dropped. */
  cancel?: AbortSignal,
  /** The run's hard expiry (epoch ms): the analysis stops there too, failed `expired`; one already past never starts. */
  expiresAtMs?: number,
): Promise<Finished> {
  const controller = new AbortController();
  const leftMs = expiresAtMs === undefined ? Number.POSITIVE_INFINITY : expiresAtMs - Date.now();
  const expires = leftMs < timeoutMs;
  const timer = setTimeout(
    () => controller.abort(expires ? 'expired' : 'timeout'),
    Math.max(0, Math.min(timeoutMs, leftMs)),
  );
  cancel?.addEventListener('abort', () => controller.abort(cancel.reason), { once: true });
  const expired = () =>
    new AnalysisFailure('expired', `its TTL ran out (expiresAt ${new Date(expiresAtMs ?? 0).toISOString()})`);
  try {
    if (leftMs <= 0) throw expired();
    const { fn, name, config } = analysisFor(subject);
    const out = await Promise.race([
      fn(config, { tenant, runId, db: deps.db, signal: controller.signal }),
      new Promise<never>((_, reject) =>
        controller.signal.addEventListener(
          'abort',
          () =>
            reject(
              controller.signal.reason === 'timeout'
                ? new AnalysisFailure('timeout', `exceeded ${timeoutMs} ms`)
                : controller.signal.reason === 'expired'
                  ? expired()
                  : new AnalysisFailure('cancelled', String(controller.signal.reason)),
            ),
          { once: true },
        ),
      ),
    ]);
    return {
      tenant,
      runId,
      event: { type: 'succeed' },
      extras: {
        outputs: { summary: out.summary, result: (out.result ?? null) as never, exitCode: 0 },
        interval: { journal: { analysis: name, out } },
      },
    };
  } catch (e) {
    const code = e instanceof AnalysisFailure ? e.code : 'analysis_error';
    const message = e instanceof Error ? e.message : String(e);
    return {
      tenant,
      runId,
      event: { type: 'fail', error: { code, message, retryable: code === 'timeout' } },
      // A failed run carries its error message as its summary, so text graders read the failure.
      extras: {
        outputs: { summary: message, exitCode: 1 },
        interval: { journal: { error: code }, exitCode: 1 },
      },
    };
  } finally {
    clearTimeout(timer);
  }
}
