// Import = materialize first. Spans whose resource names a live run of the tenant (`everdict.run_id`)
// append to that run's trajectory; all others become imported trajectories, one per OTLP trace id,
// stamped {source: "otlp", externalId: <traceId>, pulledAt}. Re-sent spans are not stored twice: the batch
// key / idempotency key is a digest of the span ids.
import { createHash } from 'node:crypto';
import { isTrajectoryStoreError } from '../errors.js';
import { type PreparedImport, prepareImport, writeImport } from '../imports.js';
import type { ImportedTrajectory } from '../records.js';
import type { TrajectoryStore } from '../trajectory-store.js';
import type { OtlpSpan } from './otlp-decode.js';
import { runIdOf, spansToDrafts } from './otlp-map.js';

export interface SpanGroups {
  /** Spans for live runs, by run id. */
  readonly routed: Map<string, OtlpSpan[]>;
  /** Every other span, by trace id (hex). */
  readonly traces: Map<string, OtlpSpan[]>;
}

/** Splits spans between live runs and per-trace imports (pure: `live` holds the run ids that are live). */
export function groupSpans(spans: readonly OtlpSpan[], live: ReadonlySet<string>): SpanGroups {
  const routed = new Map<string, OtlpSpan[]>();
  const traces = new Map<string, OtlpSpan[]>();
  for (const span of spans) {
    const runId = runIdOf(span);
    const [map, key] = runId !== undefined && live.has(runId) ? [routed, runId] : [traces, span.traceId];
    const list = map.get(key) ?? [];
    list.push(span);
    map.set(key, list);
  }
  return { routed, traces };
}

/** A digest of the spans' ids: the same spans re-sent give the same key. */
export function spanBatchKey(spans: readonly OtlpSpan[]): string {
  const ids = spans.map((s) => `${s.traceId}/${s.spanId}`).sort();
  return createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 32);
}

export interface OtlpIngestOptions {
  /** The import time stamped on imported trajectories. */
  readonly pulledAt: Date;
  /** Whether `runId` is one of this tenant's live runs (the caller asks its ledger). */
  readonly isLiveRun: (runId: string) => boolean | Promise<boolean>;
}

export interface OtlpIngestResult {
  readonly spans: number;
  readonly routed: { runId: string; spans: number; appended: number; duplicates: number }[];
  readonly imported: ImportedTrajectory[];
}

export async function ingestOtlp(
  store: TrajectoryStore,
  tenant: string,
  spans: readonly OtlpSpan[],
  options: OtlpIngestOptions,
): Promise<OtlpIngestResult> {
  const named = new Set(spans.map(runIdOf).filter((r): r is string => r !== undefined));
  const live = new Set<string>();
  for (const runId of named) if (await options.isLiveRun(runId)) live.add(runId);
  const { routed, traces } = groupSpans(spans, live);
  // Every group is checked before the first write: a refused request stores nothing.
  const appends = [...routed].map(([runId, group]) => ({ runId, group, drafts: spansToDrafts(group) }));
  for (const a of appends) store.checkDrafts(a.runId, a.drafts);
  const importOf = (traceId: string, group: readonly OtlpSpan[]) =>
    prepareImport(store, tenant, {
      provenance: { source: 'otlp', externalId: traceId, pulledAt: options.pulledAt.toISOString() },
      events: spansToDrafts(group),
      idempotencyKey: spanBatchKey(group),
    });
  const prepared = new Map<string, PreparedImport>();
  for (const [traceId, group] of traces) prepared.set(traceId, await importOf(traceId, group));
  const routedOut: OtlpIngestResult['routed'] = [];
  for (const { runId, group, drafts } of appends) {
    try {
      const r = await store.appendDrafts(tenant, runId, drafts, spanBatchKey(group));
      routedOut.push({ runId, spans: group.length, appended: r.appended, duplicates: r.duplicates });
    } catch (err) {
      // Sealed between the ledger's answer and the append: its spans are imported like any other.
      if (!isTrajectoryStoreError(err) || err.code !== 'trajectory_sealed') throw err;
      for (const span of group) traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span]);
      for (const traceId of new Set(group.map((span) => span.traceId))) prepared.delete(traceId);
    }
  }
  const imported: ImportedTrajectory[] = [];
  for (const [traceId, group] of traces)
    imported.push(await writeImport(store, prepared.get(traceId) ?? (await importOf(traceId, group))));
  return { spans: spans.length, routed: routedOut, imported };
}
