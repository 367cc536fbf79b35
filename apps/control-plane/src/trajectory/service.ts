// What the HTTP layer calls for trajectories, per principal (tenant-scoped: another tenant's run or
// trajectory is `not_found`): run trajectory pages and tails, OTLP import, imported trajectories and their
// scores, the tenant's retention policy and the deletions it made.
import { GraderList, type Judge, type TraceEvent } from '@everdict/run-model';
import {
  getImported,
  type ImportedTrajectory,
  listImported,
  type OtlpSpan,
  type TailItem,
} from '@everdict/trajectory-store';
import { iso, json, numeric } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { validationRefusal } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import type { Principal } from '../services/types.js';
import { mapStoreErrors } from './errors.js';
import { type GradedVerdict, gradeDocument, gradedDocument } from './grading.js';
import { importOtlpSpans, type OtlpImportResult } from './imports.js';
import { type ArtifactBody, runArtifact, runArtifactArchive } from './run-artifacts.js';
import type { RunTrajectories } from './run-trajectories.js';

export interface TrajectoryScoreView {
  id: string;
  trajectoryId: string;
  grader: string;
  graderType: string;
  value: number;
  passed: boolean | null;
  detail: unknown;
  digest: string;
  createdAt: string;
}

export interface ImportedView extends ImportedTrajectory {
  scores: TrajectoryScoreView[];
}

export interface DeletionView {
  id: string;
  trajectoryId: string;
  digest: string;
  sealedAt: string;
  deletedAt: string;
  reason: string;
  record: Record<string, unknown>;
}

export class TrajectoryService {
  constructor(
    private readonly deps: Deps,
    readonly runs: RunTrajectories,
    private readonly judge?: Judge,
  ) {}

  runPage(p: Principal, runId: string, page: { offset: number; limit: number }) {
    return this.runs.read(p.tenantId, runId, page).then((r) => ({
      items: r.items as TraceEvent[],
      nextOffset: r.nextOffset,
      eventCount: r.eventCount,
      sealed: r.sealed,
    }));
  }

  /** One artifact of the run, by its path under `out/` (run-artifacts.ts). */
  artifact(p: Principal, runId: string, path: string): Promise<ArtifactBody> {
    return runArtifact(this.deps.db, this.runs.store.backend, p.tenantId, runId, path);
  }

  /** Every artifact the run lists, as one canonical tar archive (run-artifacts.ts). */
  artifactArchive(p: Principal, runId: string) {
    return runArtifactArchive(this.deps.db, this.runs.store.backend, p.tenantId, runId);
  }

  runTail(
    p: Principal,
    runId: string,
    opts: { offset: number; signal: AbortSignal },
  ): Promise<AsyncGenerator<TailItem>> {
    return this.runs.tail(p.tenantId, runId, opts);
  }

  ingestOtlp(p: Principal, spans: readonly OtlpSpan[]): Promise<OtlpImportResult> {
    return importOtlpSpans(this.deps.db, this.runs, p.tenantId, spans, this.deps.clock());
  }

  async listImported(
    p: Principal,
    q: { source: string; externalId: string },
  ): Promise<{ items: ImportedView[] }> {
    const items = await mapStoreErrors(() => listImported(this.runs.store, p.tenantId, q));
    return {
      items: await Promise.all(
        items.map(async (i) => ({ ...i, scores: await this.scores(p, i.trajectoryId) })),
      ),
    };
  }

  async getImported(
    p: Principal,
    id: string,
    page: { offset: number; limit: number },
  ): Promise<{ trajectory: ImportedView; items: TraceEvent[]; nextOffset: number }> {
    const imported = await mapStoreErrors(() => getImported(this.runs.store, p.tenantId, id));
    const events = await mapStoreErrors(() => this.runs.store.read(p.tenantId, id, page));
    return {
      trajectory: { ...imported, scores: await this.scores(p, id) },
      items: events.items as TraceEvent[],
      nextOffset: events.nextOffset,
    };
  }

  /** Scores our copy of an imported trajectory with run-model graders; the scores persist with its digest. */
  async score(
    p: Principal,
    id: string,
    input: { graders: unknown },
  ): Promise<{ scores: TrajectoryScoreView[] }> {
    // The graders are the body's `graders` (POST /trajectories/:id/score): a refusal names them there, in the
    // edge's shape (the one mapping).
    const parsed = GraderList.safeParse(input.graders);
    if (!parsed.success) throw validationRefusal(parsed.error, { in: 'body', at: ['graders'] });
    const imported = await mapStoreErrors(() => getImported(this.runs.store, p.tenantId, id));
    const doc = await gradedDocument(this.runs.store, p.tenantId, imported);
    const verdicts = await gradeDocument(doc, parsed.data, this.judge);
    // Recorded under the trajectory's lock, which retention decides and deletes under (jobs.ts), and only
    // if the graded copy is still there: a score never lands on a trajectory retention deleted meanwhile.
    return this.runs.locks.run(p.tenantId, id, async (ex) => {
      const now = await mapStoreErrors(() => getImported(this.runs.store, p.tenantId, id));
      if (now.digest !== imported.digest)
        throw new ControlPlaneError('conflict', `imported trajectory ${id} changed while it was graded`);
      return { scores: await this.#record(ex, p, id, imported.digest, verdicts) };
    });
  }

  async #record(
    ex: Executor,
    p: Principal,
    id: string,
    digest: string,
    verdicts: readonly GradedVerdict[],
  ): Promise<TrajectoryScoreView[]> {
    const at = this.deps.clock().toISOString();
    const rows = verdicts.map((v) => ({
      id: this.deps.ids('tsc'),
      tenant_id: p.tenantId,
      trajectory_id: id,
      grader: v.grader,
      grader_type: v.graderType,
      value: v.value,
      passed: v.passed,
      detail: json(v.detail),
      digest,
      created_at: at,
    }));
    const saved = await ex.insertInto('trajectory_scores').values(rows).returningAll().execute();
    return saved.map(scoreView);
  }

  async scores(p: Principal, trajectoryId: string): Promise<TrajectoryScoreView[]> {
    const rows = await this.deps.db
      .selectFrom('trajectory_scores')
      .selectAll()
      .where('tenant_id', '=', p.tenantId)
      .where('trajectory_id', '=', trajectoryId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(scoreView);
  }

  async policy(p: Principal): Promise<{ trajectoryRetentionDays: number | null }> {
    const row = await this.deps.db
      .selectFrom('trajectory_policies')
      .select('retention_days')
      .where('tenant_id', '=', p.tenantId)
      .executeTakeFirst();
    return { trajectoryRetentionDays: row?.retention_days ?? null };
  }

  /** Admin only: sets (or, with null, clears) the tenant's `trajectoryRetentionDays`. */
  async setPolicy(
    p: Principal,
    input: { trajectoryRetentionDays: number | null },
  ): Promise<{ trajectoryRetentionDays: number | null }> {
    if (p.role !== 'admin')
      throw new ControlPlaneError('forbidden', 'setting the retention policy needs an admin key');
    await this.deps.db
      .insertInto('trajectory_policies')
      .values({
        tenant_id: p.tenantId,
        retention_days: input.trajectoryRetentionDays,
        updated_at: this.deps.clock(),
      })
      .onConflict((oc) =>
        oc.column('tenant_id').doUpdateSet({
          retention_days: input.trajectoryRetentionDays,
          updated_at: this.deps.clock(),
        }),
      )
      .execute();
    return { trajectoryRetentionDays: input.trajectoryRetentionDays };
  }

  async deletions(
    p: Principal,
    q: { limit: number; trajectoryId?: string | undefined },
  ): Promise<{ items: DeletionView[] }> {
    let query = this.deps.db
      .selectFrom('trajectory_deletions')
      .selectAll()
      .where('tenant_id', '=', p.tenantId)
      .orderBy('id')
      .limit(q.limit);
    if (q.trajectoryId) query = query.where('trajectory_id', '=', q.trajectoryId);
    const rows = await query.execute();
    return {
      items: rows.map((r) => ({
        id: String(numeric(r.id)),
        trajectoryId: r.trajectory_id,
        digest: r.digest,
        sealedAt: iso(r.sealed_at) ?? '',
        deletedAt: iso(r.deleted_at) ?? '',
        reason: r.reason,
        record: r.record,
      })),
    };
  }
}

function scoreView(r: {
  id: string;
  trajectory_id: string;
  grader: string;
  grader_type: string;
  value: number;
  passed: boolean | null;
  detail: unknown;
  digest: string;
  created_at: Date;
}): TrajectoryScoreView {
  return {
    id: r.id,
    trajectoryId: r.trajectory_id,
    grader: r.grader,
    graderType: r.grader_type,
    value: Number(r.value),
    passed: r.passed,
    detail: r.detail,
    digest: r.digest,
    createdAt: iso(r.created_at) ?? '',
  };
}
