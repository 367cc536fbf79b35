// Where a session's compute lives. Locally: the embedded placement — a placement Driver (the process driver,
// `@everdict/placement-process`) held by this control plane process. The handle it returns is plain JSON and
// is stored on the session row, so any replica on the same host (same driver state directory) can use it
// (the process driver adopts), and a runner holding a Kubernetes pod could hold it the same way (`holder`
// says who; only `embedded:*` holders are driven from here today).
import { type Driver, isPlacementError, MAX_WALL_TIMEOUT_MS, SandboxHandle } from '@everdict/placement';
import { ControlPlaneError } from '../errors.js';

export interface SessionCompute {
  /** Stored on each session row: `embedded:<driver>`. */
  readonly holder: string;
  readonly driver: Driver;
}

export function embeddedCompute(driver: Driver): SessionCompute {
  return { holder: `embedded:${driver.describe().driver}`, driver };
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
