// Where a session's compute lives. Locally: the embedded placement — a placement Driver (the process driver,
// `@everdict/placement-process`) held by this control plane process. The handle it returns is plain JSON and
// is stored on the session row, so any replica on the same host (same driver state directory) can use it
// (the process driver adopts). Or a paired runner (`everdict-runner`, its process or Kubernetes driver),
// driven over the runner's session channel (runners/sessions/): the row's `holder` says which
// (`embedded:<driver>` | `runner:<id>`), and every operation on a session goes to the compute its holder names.

import { type Driver, isPlacementError, MAX_WALL_TIMEOUT_MS, SandboxHandle } from '@everdict/placement';
import type { Placement } from '@everdict/run-model';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { runnerHolder, runnerOfHolder } from '../runners/sessions/hub.js';

export interface SessionCompute {
  /** Stored on each session row: `embedded:<driver>`. */
  readonly holder: string;
  readonly driver: Driver;
}

export function embeddedCompute(driver: Driver): SessionCompute {
  return { holder: `embedded:${driver.describe().driver}`, driver };
}

/** Paired runners as session compute (runners/sessions/hub.ts): placement and each runner's driver. */
export interface RunnerComputes {
  /** A connected, capable runner for new compute (the least loaded), or null. */
  place(
    tenant: string,
    driver: string,
    image: string,
    target?: string,
    ex?: Executor,
  ): Promise<string | null>;
  driver(runnerId: string): Driver;
  /** Whether this replica holds the runner's channel open right now (what it observes on the socket). */
  connected(runnerId: string): boolean;
}

/** What a session core holds compute with: the embedded driver and/or the paired runners. */
export interface ComputeSources {
  /** The embedded placement (null: this control plane holds no sandboxes itself). */
  readonly compute: SessionCompute | null;
  readonly runners?: RunnerComputes | null;
}

/** The driver a placement's isolation asks for: process namespaces → process; a container → kubernetes. */
export function driverFor(placement: Placement): string {
  if (placement.where !== 'driver')
    throw new ControlPlaneError('no_placement', 'a session is held by a driver (placement {where: driver})', {
      kind: 'sandbox',
      placement,
    });
  const isolation = placement.isolation ?? 'process';
  if (isolation === 'process') return 'process';
  if (isolation === 'container') return 'kubernetes';
  throw new ControlPlaneError('no_placement', `no driver here gives sessions isolation ${isolation}`, {
    kind: 'sandbox',
    placement,
  });
}

/** Whether a holder is a paired runner (`runner:<id>`). */
export const isRunnerHolder = (holder: string): boolean => runnerOfHolder(holder) !== null;

/** The compute a session row's holder names. */
export function computeOf(src: ComputeSources, holder: string): SessionCompute {
  const runnerId = runnerOfHolder(holder);
  if (runnerId !== null) {
    if (!src.runners)
      throw new ControlPlaneError('sandbox_unavailable', 'this control plane drives no runner sessions', {
        holder,
      });
    return { holder, driver: src.runners.driver(runnerId) };
  }
  if (!src.compute)
    throw new ControlPlaneError('sandbox_unavailable', 'this control plane holds no embedded sandboxes', {
      holder,
    });
  return src.compute;
}

/**
 * Compute for new session compute (an open, or a resume): the embedded driver when it gives the placement's
 * driver and no runner is named (`placement.target`); else a connected runner of the tenant (or a shared one)
 * offering that driver and the image — `onRunner` forces a runner (a resume of a runner-held park). 422
 * `no_placement` when none.
 */
export async function placeCompute(
  src: ComputeSources,
  tenant: string,
  placement: Placement,
  image: string,
  opts: { onRunner?: boolean; ex?: Executor } = {},
): Promise<SessionCompute> {
  const onRunner = opts.onRunner === true;
  const driver = driverFor(placement);
  const embedded = src.compute;
  if (!onRunner && !placement.target && embedded && embedded.driver.describe().driver === driver)
    return embedded;
  const runners = src.runners;
  const runnerId = runners ? await runners.place(tenant, driver, image, placement.target, opts.ex) : null;
  if (runnerId === null || !runners)
    throw new ControlPlaneError(
      'no_placement',
      `no connected runner offers ${driver} sessions in image ${image}${placement.target ? ` as ${placement.target}` : ''}`,
      { kind: 'sandbox', placement, image, driver },
    );
  return { holder: runnerHolder(runnerId), driver: runners.driver(runnerId) };
}

/** Labels every session sandbox carries (what `reap` finds orphans by). */
export const SESSION_KIND = 'sandbox';

/** A placement outcome as the control plane answers it (never a 500 for a driver's refusal). */
export function placementProblem(e: unknown): unknown {
  if (!isPlacementError(e)) return e;
  const details = { reason: e.code, ...e.detail };
  switch (e.code) {
    case 'image_not_found':
      return new ControlPlaneError('image_not_found', e.message, details);
    case 'capacity':
      return new ControlPlaneError('capacity_exceeded', e.message, {
        ...details,
        rule: 'placement_capacity',
      });
    case 'snapshot_mismatch':
      return new ControlPlaneError('snapshot_mismatch', e.message, details);
    case 'gone':
      return new ControlPlaneError('conflict', `the session's compute is gone: ${e.message}`, details);
    default:
      return new ControlPlaneError('sandbox_unavailable', e.message, details);
  }
}

/** Provision a session's sandbox: labelled by tenant and run, deadline at the longest a session may live. */
export async function provisionSession(
  compute: SessionCompute,
  tenant: string,
  runId: string,
  image: string,
): Promise<SandboxHandle> {
  try {
    return await compute.driver.provision({
      image,
      labels: { tenant, runId, kind: SESSION_KIND },
      // The reaper enforces the session's own (touchable) expiry; the driver's deadline is only a backstop.
      limits: { wallTimeoutMs: MAX_WALL_TIMEOUT_MS },
      network: 'none',
    });
  } catch (e) {
    throw placementProblem(e);
  }
}

export function handleOf(stored: unknown): SandboxHandle {
  return SandboxHandle.parse(stored);
}

/** Dispose, never throwing (disposal is idempotent; a failure is logged by the caller's reap on start). */
export async function disposeQuietly(compute: SessionCompute, handle: SandboxHandle | null): Promise<void> {
  if (!handle) return;
  await compute.driver.dispose(handle).catch(() => undefined);
}
