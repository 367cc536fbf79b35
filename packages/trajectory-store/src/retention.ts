// Retention: a tenant's `trajectoryRetentionDays` deletes sealed trajectories older than N days — except
// evidence (one a run record names, or one that carries scores: the caller answers `isEvidence`). Live
// trajectories are never touched. Each deletion leaves a tombstone (`deleted.json`, the same record the
// caller persists), so a later read answers `trajectory_deleted` rather than a silent 404.
import { z } from 'zod';
import type { ObjectBackend } from './backend.js';
import { parseOrThrow, TrajectoryStoreError } from './errors.js';
import { checkTenant, layout } from './keys.js';
import { DeletionRecord, encodeRecord, type Provenance, SealRecord } from './records.js';
import { readRecord } from './state.js';
import type { TrajectoryStore } from './trajectory-store.js';

const DAY_MS = 86_400_000;

export const RetentionPolicy = z.strictObject({
  /** Days a sealed trajectory is kept; null/absent keeps everything. */
  trajectoryRetentionDays: z.int().positive().max(100_000).nullable().optional(),
});
export type RetentionPolicy = z.infer<typeof RetentionPolicy>;

export type RetentionVerdict =
  | { readonly action: 'keep'; readonly reason: 'no_policy' | 'within_retention' | 'evidence' }
  | { readonly action: 'delete'; readonly reason: 'expired' };

/**
 * The rule, pure: keep without a policy; keep until `sealedAt + days` has passed; past it, delete unless
 * the object is evidence. Evidence is never deleted, whatever its age.
 */
export function retentionVerdict(
  object: { readonly sealedAt: string },
  policy: RetentionPolicy,
  now: Date,
  isEvidence: boolean,
): RetentionVerdict {
  const days = policy.trajectoryRetentionDays;
  if (days === null || days === undefined) return { action: 'keep', reason: 'no_policy' };
  if (Date.parse(object.sealedAt) + days * DAY_MS > now.getTime())
    return { action: 'keep', reason: 'within_retention' };
  if (isEvidence) return { action: 'keep', reason: 'evidence' };
  return { action: 'delete', reason: 'expired' };
}

/** What `isEvidence` is asked about: the sealed trajectory (run trajectories have no provenance). */
export interface RetentionCandidate {
  readonly tenant: string;
  readonly trajectoryId: string;
  readonly digest: string;
  readonly sealedAt: string;
  readonly provenance?: Provenance;
}

export interface RetentionOptions extends RetentionPolicy {
  readonly now: Date;
  /** True when a run record names this trajectory or it carries scores: then it is never deleted. */
  readonly isEvidence: (candidate: RetentionCandidate) => boolean | Promise<boolean>;
  /**
   * Runs the decision on one expired candidate — `isEvidence`, then its deletion — as one critical section
   * (e.g. under the lock a scorer takes to record a score): a score recorded meanwhile is seen, or its
   * recorder sees the tombstone; the caller may persist the deletion record `decide` answers inside it too,
   * so a pass that fails later has still recorded every deletion it made. Absent → no exclusion.
   */
  readonly exclusive?: (
    candidate: RetentionCandidate,
    decide: () => Promise<DeletionRecord | null>,
  ) => Promise<DeletionRecord | null>;
}

/** Applies the policy to every sealed trajectory of `tenant`; returns one deletion record per deletion. */
export async function applyRetention(
  store: TrajectoryStore,
  tenant: string,
  options: RetentionOptions,
): Promise<DeletionRecord[]> {
  checkTenant(tenant);
  const policy = parseOrThrow(
    RetentionPolicy,
    { trajectoryRetentionDays: options.trajectoryRetentionDays },
    'retention policy',
  );
  const days = policy.trajectoryRetentionDays;
  if (days === null || days === undefined) return [];
  const { backend } = store;
  const deletions: DeletionRecord[] = [];
  for await (const object of backend.list(tenant, layout.trajectoriesRoot)) {
    if (!object.path.endsWith('/seal.json')) continue;
    const seal = await readSealKept(backend, tenant, object.path);
    if (!seal) continue;
    const id = seal.trajectoryId;
    const candidate: RetentionCandidate = {
      tenant,
      trajectoryId: id,
      digest: seal.digest,
      sealedAt: seal.sealedAt,
      ...(seal.provenance ? { provenance: seal.provenance } : {}),
    };
    if (retentionVerdict(seal, policy, options.now, false).action !== 'delete') continue;
    const decide = () => deleteUnlessEvidence(store, tenant, seal, candidate, days, options);
    const record = await (options.exclusive ? options.exclusive(candidate, decide) : decide());
    if (record) deletions.push(record);
  }
  return deletions;
}

/**
 * A listed seal record, or null if it is gone or does not parse: a trajectory whose seal cannot be read cannot
 * be judged expired or not evidence — it is kept (its reads answer `integrity_failed`), and the pass goes on.
 */
async function readSealKept(
  backend: ObjectBackend,
  tenant: string,
  path: string,
): Promise<SealRecord | null> {
  try {
    return await readRecord(backend, tenant, path, SealRecord);
  } catch (err) {
    if (err instanceof TrajectoryStoreError && err.code === 'integrity_failed') return null;
    throw err;
  }
}

/** The deletion of one expired sealed trajectory unless it is evidence (re-read: it may have gone since). */
async function deleteUnlessEvidence(
  store: TrajectoryStore,
  tenant: string,
  listed: SealRecord,
  candidate: RetentionCandidate,
  days: number,
  options: RetentionOptions,
): Promise<DeletionRecord | null> {
  const { backend } = store;
  const id = listed.trajectoryId;
  const seal = await readSealKept(backend, tenant, layout.seal(id));
  if (!seal || seal.digest !== listed.digest) return null; // deleted (or replaced) since it was listed
  if (await options.isEvidence(candidate)) return null;
  const record = DeletionRecord.parse({
    tenant,
    trajectoryId: id,
    digest: seal.digest,
    eventCount: seal.eventCount,
    storedBytes: seal.storedBytes,
    sealedAt: seal.sealedAt,
    deletedAt: options.now.toISOString(),
    reason: 'retention',
    retentionDays: days,
    ...(seal.provenance ? { provenance: seal.provenance } : {}),
  });
  // Tombstone first: from here on the trajectory reads as deleted, whatever step a crash interrupts.
  await backend.put({ tenant, path: layout.deletion(id) }, encodeRecord(record));
  await backend.delete({ tenant, path: layout.sealedObject(id) });
  if (seal.provenance) {
    const { source, externalId } = seal.provenance;
    await backend.delete({ tenant, path: layout.importIndex(source, externalId, id) });
    await backend.delete({ tenant, path: layout.meta(id) });
  }
  await backend.delete({ tenant, path: layout.seal(id) });
  store.forget(tenant, id);
  return record;
}
