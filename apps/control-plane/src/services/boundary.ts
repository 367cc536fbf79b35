// Foreign errors (zod, run-model, admission, runrecord) become the app's one error class at this boundary.
import { AdmissionError } from '@everdict/admission';
import { RunModelError } from '@everdict/run-model';
import { isRunRecordError } from '@everdict/runrecord';
import { ZodError, type z } from 'zod';
import { ControlPlaneError, type ControlPlaneErrorCode } from '../errors.js';

const ADMISSION_CODES: Record<string, ControlPlaneErrorCode> = {
  bad_request: 'bad_request',
  unknown_tenant: 'not_found',
  unknown_run: 'not_found',
  unknown_envelope: 'not_found',
  envelope_exists: 'conflict',
  run_exists: 'conflict',
  contended: 'conflict',
  agent_disabled: 'conflict',
  envelope_exhausted: 'envelope_exhausted',
  capacity_refused: 'capacity_exceeded',
};

/**
 * A zod issue that says "a number outside its bounds": a range check on a number, an infinite number (JSON's
 * `1e400`), or a custom check that names itself `out_of_range` (an event position past bigint).
 */
export function isRangeIssue(i: z.core.$ZodIssue): boolean {
  if (i.code === 'too_big' || i.code === 'too_small') {
    return i.origin === 'number' || i.origin === 'int' || i.origin === 'bigint';
  }
  if (i.code === 'invalid_type') {
    const received = (i as { received?: unknown }).received;
    return received === 'Infinity' || received === '-Infinity';
  }
  return i.code === 'custom' && (i.params as { code?: unknown } | undefined)?.code === 'out_of_range';
}

export function toControlPlaneError(e: unknown): unknown {
  if (e instanceof ControlPlaneError) return e;
  if (e instanceof ZodError) {
    const issues = e.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
    return new ControlPlaneError(
      e.issues.length > 0 && e.issues.every(isRangeIssue) ? 'out_of_range' : 'bad_request',
      `invalid input: ${issues[0]?.path ?? ''} ${issues[0]?.message ?? ''}`.trim(),
      { issues },
    );
  }
  if (e instanceof RunModelError) {
    const code: ControlPlaneErrorCode =
      e.code === 'invalid_input'
        ? 'bad_request'
        : e.code === 'causation_refused'
          ? 'capacity_exceeded'
          : 'conflict';
    return new ControlPlaneError(code, e.message, { ...e.details, reason: e.code });
  }
  if (e instanceof AdmissionError)
    return new ControlPlaneError(ADMISSION_CODES[e.code] ?? 'internal', e.message, {
      ...e.detail,
      reason: e.code,
    });
  if (isRunRecordError(e)) {
    const code: ControlPlaneErrorCode =
      e.code === 'SnapshotMismatch'
        ? 'snapshot_mismatch'
        : e.code === 'ManifestMismatch'
          ? 'manifest_mismatch'
          : 'conflict';
    return new ControlPlaneError(code, e.message, { reason: e.code });
  }
  return e;
}

export function asControlPlaneError<T>(fn: () => T): T {
  try {
    const out = fn();
    if (out instanceof Promise) return out.catch((e: unknown) => Promise.reject(toControlPlaneError(e))) as T;
    return out;
  } catch (e) {
    throw toControlPlaneError(e);
  }
}
