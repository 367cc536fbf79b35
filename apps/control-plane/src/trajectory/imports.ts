// OTLP import (issue 12, "import = materialize first"): spans whose resource names one of the tenant's live
// runs (`everdict.run_id`) are appended to that run's trajectory through the single writer — unless an outside
// writer numbers it (run-trajectories.ts `outsideWriterOf`: a runner holding its lease, whose journal takes the
// run's next seqs; an agent turn's host, whose transcript it is), so they are imported instead; all others
// become imported trajectories — one per OTLP trace id, sealed, stamped {source: "otlp", externalId,
// pulledAt}.
import { isTerminalStatus, type RunStatus } from '@everdict/run-model';
import {
  groupSpans,
  type ImportedTrajectory,
  type OtlpSpan,
  type PreparedImport,
  prepareImport,
  runIdOf,
  spanBatchKey,
  spansToDrafts,
  writeImport,
} from '@everdict/trajectory-store';
import type { Db } from '../db/tx.js';
import { isControlPlaneError } from '../errors.js';
import { mapStoreErrors } from './errors.js';
import type { RunTrajectories } from './run-trajectories.js';

export interface OtlpImportResult {
  readonly spans: number;
  readonly routed: { runId: string; spans: number; appended: number; duplicates: number }[];
  readonly imported: ImportedTrajectory[];
}

export async function importOtlpSpans(
  db: Db,
  trajectories: RunTrajectories,
  tenant: string,
  spans: readonly OtlpSpan[],
  pulledAt: Date,
): Promise<OtlpImportResult> {
  const named = [...new Set(spans.map(runIdOf).filter((r): r is string => r !== undefined))];
  const live = new Set<string>();
  if (named.length > 0) {
    const rows = await db
      .selectFrom('runs')
      .select(['id', 'status'])
      .where('tenant_id', '=', tenant)
      .where('id', 'in', named)
      .execute();
    for (const r of rows) if (!isTerminalStatus(r.status as RunStatus)) live.add(r.id);
  }
  const { routed, traces } = groupSpans(spans, live);
  const { store } = trajectories;
  // Every group is checked before the first write: a refused request stores nothing.
  const appends = [...routed].map(([runId, group]) => ({ runId, group, drafts: spansToDrafts(group) }));
  const importOf = (traceId: string, group: readonly OtlpSpan[]) =>
    mapStoreErrors(() =>
      prepareImport(store, tenant, {
        provenance: { source: 'otlp', externalId: traceId, pulledAt: pulledAt.toISOString() },
        events: spansToDrafts(group),
        idempotencyKey: spanBatchKey(group),
      }),
    );
  await mapStoreErrors(async () => {
    for (const a of appends) store.checkDrafts(a.runId, a.drafts);
  });
  const prepared = new Map<string, PreparedImport>();
  for (const [traceId, group] of traces) prepared.set(traceId, await importOf(traceId, group));
  const routedOut: OtlpImportResult['routed'] = [];
  const importInstead = (group: readonly OtlpSpan[]) => {
    for (const span of group) traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span]);
    for (const traceId of new Set(group.map((span) => span.traceId))) prepared.delete(traceId);
  };
  for (const { runId, group, drafts } of appends) {
    try {
      const r = await trajectories.appendOutsideLease(tenant, runId, drafts, spanBatchKey(group));
      // An outside writer numbers the run's trajectory (a runner's journal, an agent host's transcript): its
      // spans are imported like any other.
      if (!r) importInstead(group);
      else routedOut.push({ runId, spans: group.length, appended: r.appended, duplicates: r.duplicates });
    } catch (err) {
      // Ended between the ledger's answer and the append: its spans are imported like any other.
      if (!isControlPlaneError(err) || err.code !== 'trajectory_sealed') throw err;
      importInstead(group);
    }
  }
  const imported: ImportedTrajectory[] = [];
  for (const [traceId, group] of traces) {
    const ready = prepared.get(traceId) ?? (await importOf(traceId, group));
    imported.push(await mapStoreErrors(() => writeImport(store, ready)));
  }
  return { spans: spans.length, routed: routedOut, imported };
}
