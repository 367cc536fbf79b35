// Scoring an imported trajectory with run-model's graders: the trajectory is read once, page by page (flat
// memory), into the run-shaped document graders read — `outputs.summary` (the last assistant message),
// `outputs.exitCode` (1 if any error event), `outputs.result` (counts), `usage` (tokens and cost summed over
// its llm_calls) — and each grader is applied to it. Judge graders go to the core's judge.
import {
  addUsage,
  type DeterministicGrader,
  EMPTY_USAGE,
  evaluateGrader,
  type Grader,
  graderName,
  type Judge,
  type Run,
  type TraceEvent,
  type Usage,
  usageFromTrace,
} from '@everdict/run-model';
import type { ImportedTrajectory, TrajectoryStore } from '@everdict/trajectory-store';
import { ControlPlaneError } from '../errors.js';
import { mapStoreErrors } from './errors.js';

export interface GradedVerdict {
  readonly grader: string;
  readonly graderType: Grader['type'];
  readonly value: number;
  readonly passed: boolean | null;
  readonly detail: string;
}

/** The run-shaped document an imported trajectory is graded as (built by streaming its events). */
export async function gradedDocument(
  store: TrajectoryStore,
  tenant: string,
  imported: ImportedTrajectory,
): Promise<Run> {
  let lastAssistant: string | undefined;
  let errors = 0;
  let toolCalls = 0;
  let usage: Usage = EMPTY_USAGE;
  let offset = 0;
  for (;;) {
    const page = await mapStoreErrors(() =>
      store.read(tenant, imported.trajectoryId, { offset, limit: 1000 }),
    );
    for (const e of page.items as TraceEvent[]) {
      if (e.type === 'message' && e.role === 'assistant')
        lastAssistant = typeof e.content === 'string' ? e.content : JSON.stringify(e.content);
      else if (e.type === 'error') errors++;
      else if (e.type === 'tool_call') toolCalls++;
    }
    usage = addUsage(usage, usageFromTrace(page.items as TraceEvent[])); // run-model's one usage fold
    if (page.items.length === 0 || page.nextOffset >= page.eventCount) break;
    offset = page.nextOffset;
  }
  const doc = {
    id: imported.trajectoryId,
    kind: 'imported',
    status: errors > 0 ? 'failed' : 'succeeded',
    provenance: imported.provenance,
    trajectory: {
      ref: imported.trajectoryId,
      eventCount: imported.eventCount,
      sealedAt: imported.sealedAt,
      digest: imported.digest,
    },
    outputs: {
      artifacts: [],
      files: [],
      scores: [],
      exitCode: errors > 0 ? 1 : 0,
      ...(lastAssistant === undefined ? {} : { summary: lastAssistant }),
      result: { eventCount: imported.eventCount, errors, toolCalls, llmCalls: usage.llmCalls },
    },
    usage,
  };
  // Graders read paths of this document; it is run-shaped where they look, not a ledger run.
  return doc as unknown as Run;
}

export async function gradeDocument(
  doc: Run,
  graders: readonly Grader[],
  judge: Judge | undefined,
): Promise<GradedVerdict[]> {
  const out: GradedVerdict[] = [];
  for (const g of graders) {
    if (g.type === 'judge') {
      if (!judge)
        throw new ControlPlaneError('judge_unavailable', 'no judge is configured for judge graders');
      const v = await judge.grade({ run: doc, grader: g });
      out.push({
        grader: graderName(g),
        graderType: g.type,
        value: v.value,
        passed: v.passed ?? null,
        detail: v.detail ?? '',
      });
      continue;
    }
    const v = evaluateGrader(g as DeterministicGrader, doc);
    out.push({
      grader: graderName(g),
      graderType: g.type,
      value: v.value,
      passed: v.passed ?? null,
      detail: v.detail,
    });
  }
  return out;
}
