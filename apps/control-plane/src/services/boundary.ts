// Foreign errors (zod, run-model, admission, runrecord) become the app's one error class at this boundary.
import { AdmissionError } from '@everdict/admission';
import { RunModelError, type RunModelIssue } from '@everdict/run-model';
import { isRunRecordError } from '@everdict/runrecord';
import { ZodError, type z } from 'zod';
import {
  ControlPlaneError,
  type ControlPlaneErrorCode,
  type IssueLocation,
  type ValidationIssue,
} from '../errors.js';

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

/** Where the value a service parsed sits in the request, when the service knows (its issues are named so). */
export interface IssueSite {
  /** The request part it came from (omitted when callers differ: then the detail says `field`). */
  readonly in?: IssueLocation;
  /** Its path within that part, prefixed to each issue's (e.g. `['after']` for a parsed scalar). */
  readonly at?: readonly (string | number)[];
  /** Renames an issue to the request's terms (e.g. run-model's `sessionTtlMs` → `runSpec.ttlSec`). */
  readonly restate?: (issue: ValidationIssue) => ValidationIssue;
}

const LOCATION_NOUNS: Readonly<Record<IssueLocation, string>> = {
  query: 'query parameter',
  path: 'path parameter',
  header: 'header',
  cookie: 'cookie',
  body: 'body field',
};

/** Issues past this many are counted in the detail, not listed. */
const MAX_ISSUES = 50;

function segments(path: readonly PropertyKey[]): (string | number)[] {
  return path.map((p) => (typeof p === 'symbol' ? String(p) : p));
}

/** A readable line naming the first offending field and why, e.g. `query parameter "limit": Too small: …`. */
function issuesDetail(issues: readonly ValidationIssue[], total: number, location?: IssueLocation): string {
  const first = issues[0];
  if (first === undefined) return `invalid ${location ?? 'request'}`;
  const field = first.path.join('.');
  const subject =
    field === ''
      ? `the ${location ?? 'request'}`
      : `${location === undefined ? 'field' : LOCATION_NOUNS[location]} "${field}"`;
  const more = total > 1 ? ` (and ${total - 1} more: see issues)` : '';
  return `${subject}: ${first.message}${more}`;
}

/**
 * THE mapping from schema issues to a refusal, for the HTTP edge's validators (http/problem.ts
 * `validationProblem`) and for every service that parses: `out_of_range` when every issue is a number outside
 * its bounds, else `validation_failed`; `issues` (each `{code, path, message, in?}`) and a message naming the
 * first offending field and why. Rendered as problem+json with top-level `issues` and that message as
 * `detail` (http/problem.ts `errorToProblem`). run-model's issues (`RunModelError.issues`) are zod's as zod
 * reported them, so they map with their real codes, and a range is a range.
 */
export function validationRefusal(
  source: ZodError | readonly RunModelIssue[],
  site: IssueSite = {},
): ControlPlaneError {
  const zod = source instanceof ZodError ? source.issues : source;
  const raw: ValidationIssue[] = zod.map((i) => ({
    code: String(i.code),
    path: segments(i.path),
    message: i.message,
  }));
  const range = zod.length > 0 && zod.every(isRangeIssue);
  return refusalOf(range ? 'out_of_range' : 'validation_failed', raw.slice(0, MAX_ISSUES), raw.length, site);
}

function refusalOf(
  code: 'validation_failed' | 'out_of_range',
  listed: readonly ValidationIssue[],
  total: number,
  site: IssueSite,
): ControlPlaneError {
  const at = site.at ?? [];
  const issues = listed.map((i) => {
    const named = site.restate ? site.restate(i) : i;
    return {
      ...named,
      path: [...at, ...named.path],
      ...(site.in === undefined ? {} : { in: site.in }),
    };
  });
  return new ControlPlaneError(code, issuesDetail(issues, total, site.in), {}, issues);
}

/**
 * A schema refusal raised deeper (a parse whose caller did not know the request), named where `site` says
 * its value sits: each issue's path prefixed with `at`, `in` set. An error that already names its part, or
 * any other, is returned as it is. (Past MAX_ISSUES issues, the detail counts the ones listed.)
 */
function sited(e: ControlPlaneError, site: IssueSite): ControlPlaneError {
  const { issues } = e;
  if (issues === undefined || issues.some((i) => i.in !== undefined)) return e;
  if (site.in === undefined && site.at === undefined) return e;
  const code = e.code === 'out_of_range' ? 'out_of_range' : 'validation_failed';
  return refusalOf(code, issues, issues.length, site);
}

/**
 * run-model's `invalid_input` that carries zod's issues (`RunModelError.issues`: `parseOrThrow`, a malformed
 * status-machine event, a session expiry past its bound) is a schema refusal: `validationRefusal`, with
 * zod's codes. Undefined for any other RunModelError (a model invariant, a state, a clock).
 */
export function runModelValidationRefusal(
  e: RunModelError,
  site: IssueSite = {},
): ControlPlaneError | undefined {
  if (e.code !== 'invalid_input' || e.issues === undefined) return undefined;
  return validationRefusal(e.issues, site);
}

export function toControlPlaneError(e: unknown, site: IssueSite = {}): unknown {
  if (e instanceof ControlPlaneError) return sited(e, site);
  if (e instanceof ZodError) return validationRefusal(e, site);
  if (e instanceof RunModelError) {
    const refusal = runModelValidationRefusal(e, site);
    if (refusal !== undefined) return refusal;
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

/** `fn`, its foreign errors as the app's; `site` names where the value it parses sits in the request. */
export function asControlPlaneError<T>(fn: () => T, site: IssueSite = {}): T {
  try {
    const out = fn();
    if (out instanceof Promise)
      return out.catch((e: unknown) => Promise.reject(toControlPlaneError(e, site))) as T;
    return out;
  } catch (e) {
    throw toControlPlaneError(e, site);
  }
}
