// The pull adapter contract: a source yields external traces, each with its external id and its events
// as drafts; `materializePull` copies each into the store as an imported trajectory stamped
// {source, externalId, pulledAt}. Later sources (Langfuse, MLflow, …) implement TraceSource and nothing else.
import type { TraceEventDraft } from '../events.js';
import { importTrajectory } from '../imports.js';
import type { ImportedTrajectory } from '../records.js';
import type { TrajectoryStore } from '../trajectory-store.js';

export interface PulledTrace {
  readonly externalId: string;
  readonly events: Iterable<TraceEventDraft> | AsyncIterable<TraceEventDraft>;
}

export interface TraceSource {
  /** The provenance `source` of everything this adapter pulls (e.g. `jsonl`, `otlp`). */
  readonly source: string;
  pull(signal?: AbortSignal): AsyncIterable<PulledTrace>;
}

/** Pulls every trace of `source` and materializes each as an imported trajectory (pulledAt = `now`). */
export async function materializePull(
  store: TrajectoryStore,
  tenant: string,
  source: TraceSource,
  { now, signal }: { now: Date; signal?: AbortSignal },
): Promise<ImportedTrajectory[]> {
  const out: ImportedTrajectory[] = [];
  for await (const trace of source.pull(signal)) {
    out.push(
      await importTrajectory(store, tenant, {
        provenance: { source: source.source, externalId: trace.externalId, pulledAt: now.toISOString() },
        events: trace.events,
      }),
    );
  }
  return out;
}
