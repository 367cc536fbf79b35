// Foreign errors (zod, run-model, admission, runrecord) become the app's one error class at this boundary.
import { AdmissionError } from '@everdict/admission';
import { RunModelError } from '@everdict/run-model';
import { isRunRecordError } from '@everdict/runrecord';
import { ZodError } from 'zod';
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

export function toControlPlaneError(e: unknown): unknown {
  if (e instanceof ControlPlaneError) return e;
  if (e instanceof ZodError) {
    const issues = e.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
    return new ControlPlaneError(
      'bad_request',
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
  if (isRunRecordError(e)) return new ControlPlaneError('conflict', e.message, { reason: e.code });
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
