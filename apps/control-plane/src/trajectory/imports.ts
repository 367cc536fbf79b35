// OTLP import (issue 12, "import = materialize first"): spans whose resource names one of the tenant's live
// runs (`everdict.run_id`) are appended to that run's trajectory through the single writer; all others
// become imported trajectories — one per OTLP trace id, sealed, stamped {source: "otlp", externalId, pulledAt}.
import { isTerminalStatus, type RunStatus } from '@everdict/run-model';
import {
  groupSpans,
  type ImportedTrajectory,
  importTrajectory,
  type OtlpSpan,
  runIdOf,
  spanBatchKey,
  spansToDrafts,
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
  const routedOut: OtlpImportResult['routed'] = [];
  for (const [runId, group] of routed) {
    try {
      const r = await trajectories.appendDrafts(tenant, runId, spansToDrafts(group), spanBatchKey(group));
      routedOut.push({ runId, spans: group.length, appended: r.appended, duplicates: r.duplicates });
    } catch (err) {
      // Ended between the ledger's answer and the append: its spans are imported like any other.
      if (!isControlPlaneError(err) || err.code !== 'trajectory_sealed') throw err;
      for (const span of group) traces.set(span.traceId, [...(traces.get(span.traceId) ?? []), span]);
    }
  }
  const imported: ImportedTrajectory[] = [];
  for (const [traceId, group] of traces) {
    imported.push(
      await mapStoreErrors(() =>
        importTrajectory(trajectories.store, tenant, {
          provenance: { source: 'otlp', externalId: traceId, pulledAt: pulledAt.toISOString() },
          events: spansToDrafts(group),
          idempotencyKey: spanBatchKey(group),
        }),
      ),
    );
  }
  return { spans: spans.length, routed: routedOut, imported };
}
