// Imported trajectories: a trace pulled or pushed from outside (OTLP, a JSONL source) is materialized as
// our own sealed trajectory first — judges run on our copy — stamped with its provenance
// {source, externalId, pulledAt}. They are trajectories, not runs. Each is findable by {source, externalId}
// through a small index object per import; an import is resumable and idempotent per `idempotencyKey`.
import { createHash } from 'node:crypto';
import { parseOrThrow, TrajectoryStoreError } from './errors.js';
import type { TraceEventDraft } from './events.js';
import { checkTenant, layout } from './keys.js';
import { encodeRecord, ImportedTrajectory, Provenance, type SealRecord, TrajectoryMeta } from './records.js';
import { readRecord } from './state.js';
import type { TrajectoryStore } from './trajectory-store.js';

export interface ImportInput {
  readonly provenance: Provenance;
  /** The events in order (numbered 0, 1, … by the store), streamed or in memory. */
  readonly events: Iterable<TraceEventDraft> | AsyncIterable<TraceEventDraft>;
  /**
   * What makes two imports the same import (e.g. a digest of the span ids an OTLP request carried):
   * importing again under the same key returns the first copy. Absent → `pulledAt` (every pull a new copy).
   */
  readonly idempotencyKey?: string;
}

const IMPORT_BATCH = 1000;

function hex(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000'), 'utf8').digest('hex');
}

/** The id an import gets: a function of its source, external id and idempotency key. */
export function importedTrajectoryId(provenance: Provenance, idempotencyKey?: string): string {
  return `imp_${hex(provenance.source, provenance.externalId, idempotencyKey ?? provenance.pulledAt).slice(0, 32)}`;
}

/**
 * An import checked in full and not yet written: every event parsed, in the batches it will be stored in
 * (none when an earlier import under the same key is already sealed: `seal` is that copy's).
 */
export interface PreparedImport {
  readonly tenant: string;
  readonly trajectoryId: string;
  readonly provenance: Provenance;
  readonly batches: readonly (readonly TraceEventDraft[])[];
  readonly seal?: SealRecord;
}

/**
 * Checks an import without writing anything: its provenance, that retention has not deleted it, and every
 * event (schema, batch size), so that a refused import — or a request of several, all prepared before the
 * first is written — stores nothing. The events are read into memory.
 */
export async function prepareImport(
  store: TrajectoryStore,
  tenant: string,
  input: ImportInput,
): Promise<PreparedImport> {
  checkTenant(tenant);
  const provenance = parseOrThrow(Provenance, input.provenance, 'provenance');
  const trajectoryId = importedTrajectoryId(provenance, input.idempotencyKey);
  const head = await store.head(tenant, trajectoryId);
  if (head.status === 'deleted')
    throw new TrajectoryStoreError(
      'trajectory_deleted',
      `imported trajectory ${trajectoryId} was deleted by retention`,
      { deletion: head.deletion },
    );
  if (head.seal) return { tenant, trajectoryId, provenance, batches: [], seal: head.seal };
  const batches: TraceEventDraft[][] = [];
  let batch: TraceEventDraft[] = [];
  let count = 0;
  const close = () => {
    if (batch.length === 0) return;
    store.checkDrafts(trajectoryId, batch, count);
    count += batch.length;
    batches.push(batch);
    batch = [];
  };
  for await (const draft of input.events) {
    batch.push(draft);
    if (batch.length >= IMPORT_BATCH) close();
  }
  close();
  return { tenant, trajectoryId, provenance, batches };
}

/** Writes a prepared import: meta, its batches (each idempotent, so a crashed import resumes), the seal, the index entry. */
export async function writeImport(
  store: TrajectoryStore,
  prepared: PreparedImport,
): Promise<ImportedTrajectory> {
  const { tenant, trajectoryId: id, provenance } = prepared;
  const { backend } = store;
  let seal = prepared.seal;
  if (!seal) {
    await backend.put(
      { tenant, path: layout.meta(id) },
      encodeRecord(TrajectoryMeta.parse({ version: 1, trajectoryId: id, provenance })),
    );
    store.forget(tenant, id); // the live state now carries the provenance
    for (const [n, batch] of prepared.batches.entries())
      await store.appendDrafts(tenant, id, batch, hex(id, String(n)).slice(0, 32));
    seal = (await store.seal(tenant, id)).seal;
  }
  // An earlier import under the same key keeps its own stamp (the first materialization is the copy).
  const entry = listing(id, seal.provenance ?? provenance, seal);
  await backend.put(
    { tenant, path: layout.importIndex(entry.provenance.source, entry.provenance.externalId, id) },
    encodeRecord(entry),
  );
  return entry;
}

/** Checks the whole import (`prepareImport`), then writes it: a refused import stores nothing. */
export async function importTrajectory(
  store: TrajectoryStore,
  tenant: string,
  input: ImportInput,
): Promise<ImportedTrajectory> {
  return writeImport(store, await prepareImport(store, tenant, input));
}

/** Every materialized copy of one external trace, oldest pull first. */
export async function listImported(
  store: TrajectoryStore,
  tenant: string,
  query: { source: string; externalId: string },
): Promise<ImportedTrajectory[]> {
  checkTenant(tenant);
  const { source, externalId } = parseOrThrow(
    Provenance.pick({ source: true, externalId: true }),
    query,
    'import query',
  );
  const items: ImportedTrajectory[] = [];
  for await (const object of store.backend.list(tenant, layout.importIndexDir(source, externalId))) {
    const entry = await readRecord(store.backend, tenant, object.path, ImportedTrajectory);
    if (entry && entry.provenance.source === source && entry.provenance.externalId === externalId)
      items.push(entry);
  }
  return items.sort((a, b) => a.provenance.pulledAt.localeCompare(b.provenance.pulledAt));
}

/** One imported trajectory by id (404 if there is none, or it is a run's trajectory). */
export async function getImported(
  store: TrajectoryStore,
  tenant: string,
  id: string,
): Promise<ImportedTrajectory> {
  const head = await store.head(tenant, id);
  if (head.status === 'deleted')
    throw new TrajectoryStoreError(
      'trajectory_deleted',
      `imported trajectory ${id} was deleted by retention`,
      {
        deletion: head.deletion,
      },
    );
  if (head.status !== 'sealed' || !head.seal?.provenance)
    throw new TrajectoryStoreError('not_found', `no imported trajectory ${id}`);
  return listing(id, head.seal.provenance, head.seal);
}

function listing(id: string, provenance: Provenance, seal: SealRecord): ImportedTrajectory {
  return {
    trajectoryId: id,
    provenance,
    digest: seal.digest,
    eventCount: seal.eventCount,
    sealedAt: seal.sealedAt,
  };
}
