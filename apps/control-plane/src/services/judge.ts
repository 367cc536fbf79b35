// The Judge port: model-based graders are decided by an injected run-model `Judge` (CoreOptions.judge).
// The control plane ships one deterministic judge, for tests and demos: a script of per-judgeId
// handlers, with a built-in `keywords` handler. A model-backed judge implements the same interface.
import type { Judge, JudgeGrader, JudgeVerdict, Run } from '@everdict/run-model';
import { ControlPlaneError } from '../errors.js';

export type { Judge, JudgeVerdict } from '@everdict/run-model';

/** One scripted judgement: a fixed verdict, or a pure function of the run and the grader. */
export type JudgeScript = JudgeVerdict | ((request: { run: Run; grader: JudgeGrader }) => JudgeVerdict);

/** The text a judge reads from a run: its summary and its structured result. */
function runText(run: Run): string {
  const { summary, result } = run.outputs;
  return [summary ?? '', result === undefined ? '' : JSON.stringify(result)].join('\n').toLowerCase();
}

/**
 * `keywords`: the rubric's words (3+ letters, case-insensitive) looked for in the run's summary and
 * result; value = the fraction found, passed when at least half are. Deterministic: a stand-in for a
 * model, with the same request and verdict shapes.
 */
export function keywordVerdict({ run, grader }: { run: Run; grader: JudgeGrader }): JudgeVerdict {
  const words = [...new Set((grader.rubric ?? '').toLowerCase().match(/[\p{L}\p{N}_]{3,}/gu) ?? [])];
  if (words.length === 0) {
    throw new ControlPlaneError('bad_request', `judge ${grader.judgeId} needs a rubric with words to find`, {
      judgeId: grader.judgeId,
    });
  }
  const text = runText(run);
  const found = words.filter((w) => text.includes(w));
  const value = found.length / words.length;
  return {
    value,
    passed: value >= 0.5,
    detail: `found ${found.length}/${words.length} rubric words${found.length ? `: ${found.join(', ')}` : ''}`,
  };
}

/** A deterministic Judge from a script keyed by judgeId; `keywords` is built in. Unknown ids are a 400. */
export function scriptedJudge(script: Record<string, JudgeScript> = {}): Judge {
  const handlers: Record<string, JudgeScript> = { keywords: keywordVerdict, ...script };
  return {
    async grade(request) {
      const handler = Object.hasOwn(handlers, request.grader.judgeId)
        ? handlers[request.grader.judgeId]
        : undefined;
      if (handler === undefined) {
        throw new ControlPlaneError('bad_request', `unknown judge ${request.grader.judgeId}`, {
          judgeId: request.grader.judgeId,
          known: Object.keys(handlers),
        });
      }
      return typeof handler === 'function' ? handler(request) : handler;
    },
  };
}
