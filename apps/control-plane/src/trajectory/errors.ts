// The trajectory store's refusals in the control plane's one vocabulary (its codes are REFUSALS entries).
import { isTrajectoryStoreError, type TrajectoryStoreError } from '@everdict/trajectory-store';
import { ControlPlaneError } from '../errors.js';

/** A TrajectoryStoreError as the ControlPlaneError with the same code; anything else as it was. */
export function fromStoreError(e: unknown): unknown {
  if (!isTrajectoryStoreError(e)) return e;
  const err: TrajectoryStoreError = e;
  const details = { ...err.detail };
  switch (err.code) {
    case 'bad_request':
      return new ControlPlaneError('bad_request', err.message, details);
    case 'not_found':
      return new ControlPlaneError('not_found', err.message, details);
    case 'trajectory_deleted':
      return new ControlPlaneError('trajectory_deleted', err.message, details);
    case 'trajectory_sealed':
      return new ControlPlaneError('trajectory_sealed', err.message, details);
    case 'event_conflict':
      return new ControlPlaneError('event_conflict', err.message, details);
    case 'out_of_order':
      return new ControlPlaneError('out_of_order', err.message, details);
    case 'integrity_failed':
      return new ControlPlaneError('integrity_failed', err.message, details);
    default:
      return new ControlPlaneError('storage_unavailable', err.message, details);
  }
}

/** `fn()` with store refusals rethrown as ControlPlaneErrors. */
export async function mapStoreErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw fromStoreError(e);
  }
}
