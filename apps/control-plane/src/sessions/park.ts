// The image park: suspend snapshots the workspace (the driver's deterministic tar, BLAKE3-addressed), keeps
// it in the object store, parks the record on it (a `suspended` segment naming the snapshot and the
// environment manifest), releases the compute, and leaves the run awaiting_input. Resume provisions fresh
// compute, offers the snapshot to the record — runrecord refuses another snapshot or manifest (409, the
// transaction rolls back: nothing changes) — restores the workspace (the driver refuses bytes that do not
// hash to the address), and records the park's idle energy (estimated, labelled, never zero).
import type { Placement } from '@everdict/run-model';
import type { Hex } from '@everdict/runrecord';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { rowToView } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { asControlPlaneError } from '../services/boundary.js';
import { transitionTx } from '../services/lifecycle.js';
import type { Principal } from '../services/types.js';
import {
  computeOf,
  handleOf,
  isRunnerHolder,
  placeCompute,
  placementProblem,
  provisionSession,
  type SessionCompute,
} from './compute.js';
import { OPEN_SESSION_WATTS, parkEnergyUj, SESSION_METER } from './meter.js';
import { execsCleared, type Park, sessionOf } from './rows.js';
import type { SessionCore } from './service.js';
import { ResumeInput } from './types.js';

export async function suspendSession(core: SessionCore, p: Principal, runId: string): Promise<RunView> {
  const { deps, snapshots } = core;
  const row = await withTx(
    deps.db,
    async (tx) => {
      const { session } = await sessionOf(tx, p, runId, { lock: true, state: 'open', at: deps.clock() });
      const handle = handleOf(session.handle);
      const compute = computeOf(core, session.holder);
      const snap = await compute.driver.snapshot(handle).catch((e: unknown) => {
        throw placementProblem(e);
      });
      // The park's own object (a store that does not answer: 503, the tx rolls back, nothing changes).
      const path = await snapshots.put(p.tenantId, runId, snap.address, snap.bytes);
      // Refused after the upload (the record, the row, the release): the object goes with the refusal.
      const unstore = (e: unknown) =>
        snapshots.delete(p.tenantId, path).then(
          () => Promise.reject(e),
          () => Promise.reject(e),
        );
      const park: Park = {
        address: snap.address,
        path,
        manifest: handle.environment.address,
        bytes: snap.bytes.byteLength,
      };
      return (async () => {
        const { row: parked } = await transitionTx(
          tx,
          deps,
          p.tenantId,
          runId,
          { type: 'await_input', reason: 'suspended' },
          {
            image: { root: snap.address as Hex },
            manifest: park.manifest,
            interval: { watts: OPEN_SESSION_WATTS, meter: SESSION_METER },
          },
        );
        const now = deps.clock();
        await tx
          .updateTable('sessions')
          .set({
            state: 'parked',
            handle: null,
            park: JSON.stringify(park),
            parked_at: now,
          })
          .where('tenant_id', '=', p.tenantId)
          .where('run_id', '=', runId)
          .execute();
        await execsCleared(tx, p.tenantId, runId);
        // Released before the commit: a failed commit leaves an open row whose compute is gone (settled lost
        // at its next use), never compute no row names.
        await compute.driver.dispose(handle);
        return parked;
      })().catch(unstore);
    },
    1,
  );
  return rowToView(row);
}

export async function resumeSession(
  core: SessionCore,
  p: Principal,
  runId: string,
  raw: unknown,
): Promise<RunView> {
  const input = asControlPlaneError(() => ResumeInput.parse(raw ?? {}));
  const { deps, snapshots } = core;
  let handle: Awaited<ReturnType<typeof provisionSession>> | null = null;
  let compute: Awaited<ReturnType<typeof placeCompute>> | null = null;
  try {
    const { resumed: row, path } = await withTx(
      deps.db,
      async (tx) => {
        const { run, session } = await sessionOf(tx, p, runId, {
          lock: true,
          state: 'parked',
          at: deps.clock(),
        });
        const park = session.park as unknown as Park;
        const offered = input.snapshot ?? park.address;
        // Fresh compute on ANY capable holder of the same driver: a park a runner made resumes on whichever
        // connected runner offers that driver (the one that parked it may be gone); the manifest decides.
        const { target: _pinned, ...placement } = (run.placement ?? {
          where: 'driver',
          isolation: 'process',
        }) as Placement;
        compute = await placeCompute(core, p.tenantId, placement, session.image, {
          onRunner: isRunnerHolder(session.holder),
          ex: tx,
        });
        handle = await provisionSession(compute, p.tenantId, runId, session.image);
        const now = deps.clock();
        const parkedMs = now.getTime() - (session.parked_at ?? now).getTime();
        // The record first: a different snapshot or manifest is refused here (409), before any bytes move.
        const { row: resumed } = await transitionTx(
          tx,
          deps,
          p.tenantId,
          runId,
          { type: 'resume_input' },
          {
            image: { root: offered as Hex, idleUj: parkEnergyUj(parkedMs, park.bytes) },
            manifest: handle.environment.address,
          },
        );
        const bytes = await snapshots.get(p.tenantId, park.path);
        if (!bytes)
          throw new ControlPlaneError(
            'conflict',
            `the parked snapshot ${park.address} is missing from storage`,
            {
              reason: 'snapshot_missing',
            },
          );
        await compute.driver.restore(handle, { address: offered, bytes }).catch((e: unknown) => {
          throw placementProblem(e);
        });
        await tx
          .updateTable('sessions')
          .set({
            state: 'open',
            holder: compute.holder,
            handle: JSON.stringify(handle),
            park: null,
            parked_at: null,
            last_activity_at: now,
            idle_deadline: new Date(now.getTime() + session.idle_timeout_sec * 1000),
          })
          .where('tenant_id', '=', p.tenantId)
          .where('run_id', '=', runId)
          .execute();
        await execsCleared(tx, p.tenantId, runId);
        return { resumed, path: park.path };
      },
      1,
    );
    // The workspace lives again in compute: the parked object is no longer needed (the record keeps its address).
    await snapshots.delete(p.tenantId, path).catch(() => undefined);
    return rowToView(row);
  } catch (e) {
    // (Assigned inside the transaction's callback: TypeScript cannot see it.)
    const held = compute as SessionCompute | null;
    if (handle && held) await held.driver.dispose(handle).catch(() => undefined);
    throw e;
  }
}
