// Count a refusal of the admission gate by its outcome and rule (the success path counts itself). When the
// core reports admissions itself (`metrics.coreObserver()` passed to startCore) these calls are ignored.
import type { Metrics } from '../observability/metrics.js';
import { errorToProblem } from './problem.js';

export function admissionOutcome(metrics: Metrics, kind: string, err: unknown): void {
  const { problem } = errorToProblem(err);
  if (problem.status === 402) metrics.recordAdmission('refused_402', kind, problem.rule);
  else if (problem.status === 429) metrics.recordAdmission('refused_429', kind, problem.rule);
  else if (problem.status < 500) metrics.recordAdmission('refused_other', kind, problem.code);
}
