// The pull adapter contract: a source yields external traces, each with its external id and its events
// as drafts; `materializePull` copies each into the store as an imported trajectory stamped
// {source, externalId, pulledAt}. Later sources (Langfuse, MLflow, …) implement TraceSource and nothing else.
import type { TraceEventDraft } from '../events.js';
import { type PreparedImport, prepareImport, writeImport } from '../imports.js';
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

/**
 * Pulls every trace of `source` and materializes each as an imported trajectory (pulledAt = `now`). Every
 * trace is pulled and checked (`prepareImport`) before the first is written: a pull refused on any trace — an
 * event that fails its schema, a source that fails midway — stores nothing. A trace the source yields twice
 * under one external id is one copy (the first).
 */
export async function materializePull(
  store: TrajectoryStore,
  tenant: string,
  source: TraceSource,
  { now, signal }: { now: Date; signal?: AbortSignal },
): Promise<ImportedTrajectory[]> {
  const pulledAt = now.toISOString();
  const prepared: PreparedImport[] = [];
  for await (const trace of source.pull(signal))
    prepared.push(
      await prepareImport(store, tenant, {
        provenance: { source: source.source, externalId: trace.externalId, pulledAt },
        events: trace.events,
      }),
    );
  const written = new Map<string, ImportedTrajectory>();
  const out: ImportedTrajectory[] = [];
  for (const p of prepared) {
    const entry = written.get(p.trajectoryId) ?? (await writeImport(store, p));
    written.set(p.trajectoryId, entry);
    out.push(entry);
  }
  return out;
}
