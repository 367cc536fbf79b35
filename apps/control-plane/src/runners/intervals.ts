// What a runner reports about the interval it holds a lease for while it runs: its events (appended to the
// run's trajectory; `runner_journals` says where each epoch's journal sits in it — what its attestation
// commits to) and its artifacts (in the trajectory store). Its completion is completion.ts.
import { Readable } from 'node:stream';
import { blake3, bytesToHex } from '@everdict/runrecord';
import {
  canonicalJsonl,
  discardStaged,
  placeArtifact,
  type StagedArtifact,
  stageArtifact,
} from '@everdict/trajectory-store';
import type { Executor, Tx } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { REVOKED_EXPIRY_MS, staleLease } from '../leases/store.js';
import type { Deps } from '../services/context.js';
import { lockArtifactAddresses } from '../trajectory/artifact-sweep.js';
import { mapStoreErrors } from '../trajectory/errors.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { holdRunner } from './completion-rows.js';
import { assertRunnerLease } from './leases.js';
import { type RunnerIdentity, runnerMaySee } from './registry.js';
import { ArtifactQuery, EventsInput } from './schemas.js';

export const parse = <T>(
  s: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: unknown } },
  v: unknown,
): T => {
  const r = s.safeParse(v);
  if (!r.success) throw r.error;
  return r.data;
};

export function journalRootOf(events: readonly unknown[]): string {
  return bytesToHex(blake3(new TextEncoder().encode(canonicalJsonl(events))));
}

/** The default bound on one artifact upload: 5 GiB, what S3's CopyObject (the S3 backend's move) takes. */
export const ARTIFACT_MAX_BYTES = 5 * 1024 ** 3;

export const artifactTooLarge = (maxBytes: number) =>
  new ControlPlaneError('artifact_too_large', `an artifact is limited to ${maxBytes} bytes`, { maxBytes });

export const noStore = () =>
  new ControlPlaneError(
    'storage_unavailable',
    'this control plane has no trajectory store for runner events',
  );

const inTx = <T>(ex: Executor, fn: (tx: Tx) => Promise<T>): Promise<T> =>
  ex.isTransaction ? fn(ex as Tx) : ex.transaction().execute(fn);

/**
 * Append events to the run's trajectory under the runner's current lease (else 409 `stale_lease`) — the
 * trajectory store is where they live (nothing is copied into the ledger). The run's trajectory writer
 * lock is held, and the lease row locked, while they are written: a grant of the next epoch waits, then
 * sees how far this journal went. Events carry the trajectory's seqs from the lease's `seqFrom` on; a
 * re-sent batch is skipped by the store (same bytes) and anything else out of place is refused.
 *
 * The lease row's lock (FOR UPDATE) also serializes the batch with its runner's revoke, whose expiry of the
 * lease (`expireHolder`: an UPDATE of that row) waits for it: a batch past its lease check is stored before
 * the revoke commits, and one that reads the lease after the revoke's UPDATE waits for its commit and reads the
 * lease revoked (409). No runner-row lock is needed here (`test/interval-revoke.pg.test.ts`).
 */
export async function appendRunnerEvents(
  deps: Deps,
  runner: RunnerIdentity,
  runId: string,
  raw: unknown,
  trajectories: RunTrajectories | null = null,
): Promise<{ eventCount: number }> {
  const input = parse(EventsInput, raw);
  const foreign = input.events.find((e) => e.runId !== runId);
  if (foreign)
    throw new ControlPlaneError('bad_request', `an event of run ${foreign.runId} reported for run ${runId}`);
  if (!trajectories) throw noStore();
  const owner = await deps.db
    .selectFrom('runs')
    .select('tenant_id')
    .where('id', '=', runId)
    .executeTakeFirst();
  // Another tenant's run is, to a tenant-scoped runner, as a run that does not exist (no epoch answered).
  if (!owner || !runnerMaySee(runner, owner.tenant_id)) throw staleLease(runId, input.epoch, null);
  const tenant = owner.tenant_id;
  return trajectories.locks.run(tenant, runId, (ex) =>
    inTx(ex, async (tx) => {
      const lease = await tx
        .selectFrom('run_leases')
        .select(['epoch', 'holder', 'expires_at_ms'])
        .where('run_id', '=', runId)
        .forUpdate()
        .executeTakeFirst();
      // A lease the runner's revocation ended takes no more events (a batch sent before it was revoked).
      if (
        !lease ||
        Number(lease.epoch) !== input.epoch ||
        lease.holder !== runner.id ||
        Number(lease.expires_at_ms) === REVOKED_EXPIRY_MS
      )
        throw staleLease(runId, input.epoch, lease ? Number(lease.epoch) : null);
      const run = await tx
        .selectFrom('runs')
        .select(['status', 'trajectory_open'])
        .where('id', '=', runId)
        .executeTakeFirst();
      if (run?.status !== 'running') throw staleLease(runId, input.epoch, null);
      // The first append marks the run, so its terminal transition queues the trajectory's seal (0013).
      if (!run.trajectory_open && input.events.length > 0)
        await tx.updateTable('runs').set({ trajectory_open: true }).where('id', '=', runId).execute();
      const j = await tx
        .selectFrom('runner_journals')
        .select(['seq_from', 'event_count'])
        .where('run_id', '=', runId)
        .where('epoch', '=', input.epoch)
        .executeTakeFirst();
      const from = j ? Number(j.seq_from) : 0;
      const count = j ? Number(j.event_count) : 0;
      if (input.events.length === 0) return { eventCount: count };
      const below = input.events.find((e) => e.seq < from);
      if (below)
        throw new ControlPlaneError(
          'out_of_order',
          `event seq ${below.seq} is before this interval's journal (it starts at ${from})`,
          { seqFrom: from },
        );
      // The first append marks the run so its terminal transition queues the seal (migration 0013); only
      // while it is still running, on the latest row version.
      if (!run.trajectory_open) {
        const marked = await tx
          .updateTable('runs')
          .set({ trajectory_open: true })
          .where('id', '=', runId)
          .where('status', '=', 'running')
          .executeTakeFirst();
        if (Number(marked.numUpdatedRows) === 0) throw staleLease(runId, input.epoch, null);
      }
      // Another replica may have appended since this process last looked: re-read the head from storage.
      if (deps.ldb.dialect === 'postgres') trajectories.store.forget(tenant, runId);
      await mapStoreErrors(() => trajectories.store.appendTrusted(tenant, runId, input.events));
      const last = input.events[input.events.length - 1]!.seq;
      const eventCount = Math.max(count, last + 1 - from);
      await tx
        .insertInto('runner_journals')
        .values({ run_id: runId, epoch: input.epoch, seq_from: from, event_count: eventCount })
        .onConflict((oc) => oc.columns(['run_id', 'epoch']).doUpdateSet({ event_count: eventCount }))
        .execute();
      return { eventCount };
    }),
  );
}

/** Removes the listing of `path` under (run, epoch) if it still names `address`. */
async function unlistArtifact(deps: Deps, runId: string, epoch: number, path: string, address: string) {
  await deps.db
    .deleteFrom('runner_artifacts')
    .where('run_id', '=', runId)
    .where('epoch', '=', epoch)
    .where('path', '=', path)
    .where('address', '=', address)
    .execute();
}

/**
 * The tenant of a run the runner holds under `epoch` — checked before any byte is staged, so an upload under a
 * lease that is gone stores nothing (it is checked again where the listing commits: `commitStaged`). Another
 * tenant's run is, to a tenant-scoped runner, as a run that does not exist (no epoch answered).
 */
export async function leasedRunTenant(
  deps: Deps,
  runner: RunnerIdentity,
  runId: string,
  epoch: number,
): Promise<string> {
  const owner = await deps.db
    .selectFrom('runs')
    .select('tenant_id')
    .where('id', '=', runId)
    .executeTakeFirst();
  if (!owner || !runnerMaySee(runner, owner.tenant_id)) throw staleLease(runId, epoch, null);
  await withTx(deps.db, (tx) => assertRunnerLease(tx, runner, runId, epoch));
  return owner.tenant_id;
}

/**
 * Store one artifact under the runner's current lease in the trajectory store (content-addressed, per
 * tenant: `blake3:<hex>`), streamed — never held whole — and list it for the epoch in `runner_artifacts`
 * (the lease checked again there, under the runner's row: a revoke that commits first refuses it, 409); then
 * move the staged bytes to their address, outside the listing's transaction.
 */
export async function putArtifact(
  deps: Deps,
  trajectories: RunTrajectories | null,
  runner: RunnerIdentity,
  runId: string,
  query: unknown,
  body: ReadableStream<Uint8Array> | null,
  maxBytes = ARTIFACT_MAX_BYTES,
): Promise<{ path: string; address: string; size: number }> {
  const q = parse(ArtifactQuery, query);
  const tenant = await leasedRunTenant(deps, runner, runId, q.epoch);
  if (!trajectories) throw noStore();
  const source = body ? Readable.fromWeb(body as Parameters<typeof Readable.fromWeb>[0]) : Readable.from([]);
  const backend = trajectories.store.backend;
  // Counted as it streams: past the bound the stream fails, the store drops what it had written, and the
  // answer is 413 (the store's own failure would name storage, not the size).
  let received = 0;
  let tooLarge = false;
  async function* bounded(): AsyncGenerator<Uint8Array> {
    for await (const piece of source as AsyncIterable<Uint8Array>) {
      received += piece.byteLength;
      if (received > maxBytes) {
        tooLarge = true;
        throw artifactTooLarge(maxBytes);
      }
      yield piece;
    }
  }
  const staged = await mapStoreErrors(() =>
    stageArtifact(backend, tenant, { path: q.path, body: bounded() }),
  ).catch((e: unknown) => {
    throw tooLarge ? artifactTooLarge(maxBytes) : e;
  });
  await commitStaged(deps, backend, runner, runId, q.epoch, [staged]);
  return { path: q.path, address: staged.address, size: staged.size };
}

/**
 * Lists staged artifacts for the epoch in `runner_artifacts` — one transaction, the lease checked again there
 * under the runner's row (a revoke that commits first refuses it, 409) — then moves each staged copy to its
 * address, outside the listing's transaction. What was not placed is discarded, and its listing withdrawn: the
 * runner is told the upload failed. The one way in for a single upload (`putArtifact`) and a batch
 * (artifact-batch.ts).
 */
export async function commitStaged(
  deps: Deps,
  backend: RunTrajectories['store']['backend'],
  runner: RunnerIdentity,
  runId: string,
  epoch: number,
  staged: readonly StagedArtifact[],
): Promise<void> {
  let listed = false;
  const placed = new Set<StagedArtifact>();
  try {
    await withTx(deps.db, async (tx) => {
      // The runner's row first, FOR KEY SHARE, as a completion holds it (completion-rows.ts): the lease check
      // reads the lease without a lock, so without it a revoke could commit between this check and the commit
      // and the artifact be listed under a lease the revoke had ended. With it the revoke (FOR UPDATE of the row)
      // waits for this listing, or this listing for the revoke — and then reads the lease revoked (409).
      await holdRunner(tx, runner.id);
      await assertRunnerLease(tx, runner, runId, epoch);
      // The address's lock, which the artifact sweep takes to decide and delete. Listed under it, the address is
      // needed from this commit on (the run has not ended): a sweep that decides after keeps it, and one that
      // decided first has deleted what it deletes before this listing — the bytes placed below are not. One
      // statement, in address order: two batches sharing addresses never wait on each other in a cycle.
      await lockArtifactAddresses(
        tx,
        staged[0]!.tenant,
        staged.map((a) => a.address),
      );
      await tx
        .insertInto('runner_artifacts')
        .values(staged.map((a) => ({ run_id: runId, epoch, path: a.path, address: a.address, size: a.size })))
        .onConflict((oc) =>
          oc.columns(['run_id', 'epoch', 'path']).doUpdateSet((eb) => ({
            address: eb.ref('excluded.address'),
            size: eb.ref('excluded.size'),
          })),
        )
        .execute();
    });
    listed = true;
    // Outside any transaction: on S3 the move is a copy (seconds for a large file), which held the runner's row
    // and a connection for its length when it ran inside the listing's transaction.
    for (const a of staged) {
      await mapStoreErrors(() => placeArtifact(backend, a));
      placed.add(a);
    }
  } finally {
    for (const a of staged) {
      if (placed.has(a)) continue;
      await discardStaged(backend, a).catch(() => undefined);
      // A listing whose bytes were never placed is withdrawn: the runner was told the upload failed.
      if (listed) await unlistArtifact(deps, runId, epoch, a.path, a.address).catch(() => undefined);
    }
  }
}
