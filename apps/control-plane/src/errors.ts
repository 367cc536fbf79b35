import type { RefusalRule } from '@everdict/admission';

// The one error class of the control plane, and the one vocabulary of refusals: every code the app answers
// with (from the HTTP edge or from the core) is in REFUSALS, with its one HTTP status. The README's refusal
// table is checked against this list (src/http/refusal-table.test.ts).

export const REFUSALS = {
  bad_request: { status: 400, when: 'the core refuses the input (e.g. an analysis run not placed inline)' },
  validation_failed: { status: 400, when: 'the request does not match its schema (`issues` lists why)' },
  malformed_json: { status: 400, when: 'the body is not JSON' },
  out_of_range: {
    status: 400,
    when: "every offending field is a number (or event position) outside its bounds — the ledger columns' ranges",
  },
  invalid_cursor: { status: 400, when: 'a list `cursor` this API did not issue' },
  invalid_unicode: {
    status: 400,
    when: 'a string or key holds a lone UTF-16 surrogate (PostgreSQL cannot store it)',
  },
  too_deep: { status: 400, when: 'a JSON body nests deeper than 128 levels (decided before parsing)' },
  nul_character: {
    status: 400,
    when: 'a string, key, path or query holds U+0000 (PostgreSQL cannot store it)',
  },
  judge_unavailable: { status: 400, when: 'a `judge` grader, but no judge is configured' },
  unauthenticated: { status: 401, when: 'no API key (`Authorization: Bearer <key>`)' },
  unauthorized: { status: 401, when: 'an unknown or revoked API key' },
  invalid_service_token: { status: 401, when: '`/internal/*` without the service token' },
  internal_disabled: { status: 401, when: '`/internal/*` while `EVERDICT_INTERNAL_TOKEN` is unset' },
  invalid_pairing_token: {
    status: 401,
    when: '`POST /runners/pair` (or `/agents/hosts/pair`) with a pairing token that is unknown, used, expired, or minted by an API key revoked since',
  },
  invalid_runner_credential: {
    status: 401,
    when: '`/runner/v1/*` without the credential of a paired, non-revoked runner',
  },
  invalid_agent_host: {
    status: 401,
    when: 'an agent lease, heartbeat, call or report whose `holder` is a revoked host (or unpaired, with `EVERDICT_AGENT_REQUIRE_PAIRED=1`)',
  },
  envelope_exhausted: { status: 402, when: 'admission rule `envelope`: an envelope on the path is spent' },
  forbidden: { status: 403, when: 'a member key on an admin route' },
  not_found: {
    status: 404,
    when: "no such resource in the caller's tenant (another tenant's, or a causer run the key may not name)",
  },
  route_not_found: { status: 404, when: 'no route for this method and path' },
  conflict: { status: 409, when: 'the state does not allow it (terminal run, agent disabled, …)' },
  causer_cancelled: {
    status: 409,
    when: 'admission rule `causer_cancelled`: a run caused by a cancelled tree (nothing is created)',
  },
  snapshot_mismatch: {
    status: 409,
    when: 'a resume offers a snapshot other than the one parked (nothing is written)',
  },
  manifest_mismatch: {
    status: 409,
    when: "the resuming environment's manifest is not the parked one (nothing is written)",
  },
  attestation_mismatch: {
    status: 409,
    when: "a runner's (or paired agent host's) interval attestation that is not signed by its key, not bound to the run, or whose journal root is not the events stored for the epoch, or whose outputs list an artifact not stored under its lease; nothing changes",
  },
  harness_conflict: {
    status: 409,
    when: 'a harness version defined again with a different body (versions are immutable)',
  },
  stale_lease: {
    status: 409,
    when: "a result or heartbeat from a superseded attempt: its lease epoch is not the run's current one",
  },
  trajectory_sealed: {
    status: 409,
    when: "the run's trajectory is sealed (the run is terminal) or deleted: it takes no more events",
  },
  event_conflict: { status: 409, when: 'a trajectory event reuses a stored `seq` with different content' },
  out_of_order: {
    status: 409,
    when: 'a trajectory event whose `seq` is not above the last stored one and was never stored',
  },
  trajectory_deleted: {
    status: 404,
    when: 'retention deleted this sealed trajectory (`details.deletion` is the deletion record)',
  },
  body_too_large: { status: 413, when: 'the body is larger than `EVERDICT_MAX_BODY_BYTES`' },
  artifact_too_large: {
    status: 413,
    when: "a runner's artifact upload is larger than `EVERDICT_ARTIFACT_MAX_BYTES` (`maxBytes`); nothing is stored or listed",
  },
  unsupported_media_type: { status: 415, when: 'a body that is not `application/json`' },
  no_placement: {
    status: 422,
    when: 'no configured executor can ever take this kind/placement (`kind`, `placement`; a runner kind: `image`, and `draining` with each draining runner that would take it, named in the message); nothing is saved',
  },
  image_not_found: {
    status: 422,
    when: "a sandbox's image is not one the embedded placement has (`image`); nothing is saved",
  },
  upgrade_required: {
    status: 426,
    when: '`GET /runs/:id/terminal` without a WebSocket upgrade',
  },
  invalid_terminal_ticket: {
    status: 401,
    when: 'a terminal ticket that is unknown, already redeemed, expired, for another run, or minted by an API key revoked since',
  },
  capacity_exceeded: { status: 429, when: 'an admission cap (`rule`: see below)' },
  internal: { status: 500, when: 'a defect of ours (logged with its stack; never bad input)' },
  shutting_down: { status: 503, when: 'the process is draining: writes are refused' },
  sandbox_unavailable: {
    status: 503,
    when: "a session's compute could not be provisioned or reached (problem member `reason`: the driver's code, or `runner_unreachable`)",
  },
  database_unavailable: { status: 503, when: 'the ledger database does not answer' },
  storage_unavailable: { status: 503, when: 'the trajectory store (directory or bucket) does not answer' },
  integrity_failed: {
    status: 503,
    when: "a stored trajectory's bytes no longer match its digest: reported, never served as valid",
  },
} as const satisfies Record<string, { status: number; when: string }>;

export type ControlPlaneErrorCode = keyof typeof REFUSALS;

/**
 * The admission gate's rules (@everdict/admission), as a refusal names them in `rule`, with the code and
 * status they answer and whether a `Retry-After` comes with them (only when the gate knows a time).
 */
export const ADMISSION_RULES = {
  agent_disabled: { code: 'conflict', retryAfter: false, when: 'the agent being activated is disabled' },
  causer_cancelled: {
    code: 'causer_cancelled',
    retryAfter: false,
    when: "the causer is cancelled, or a cancelled ancestor's cascade reaches it (its tree causes nothing more)",
  },
  envelope: {
    code: 'envelope_exhausted',
    retryAfter: false,
    when: 'the drawn envelope or an ancestor up to the tenant root has no usd / tokens / runs left',
  },
  queue_depth: { code: 'capacity_exceeded', retryAfter: true, when: "the tenant's queue is at `maxQueued`" },
  session_cap: {
    code: 'capacity_exceeded',
    retryAfter: true,
    when: 'the tenant or global session pool is full',
  },
  concurrency: {
    code: 'capacity_exceeded',
    retryAfter: true,
    when: "an envelope on the path is at its `inFlightCap` (the root's: the tenant policy's)",
  },
  children: {
    code: 'capacity_exceeded',
    retryAfter: false,
    when: 'the causer already caused `maxChildrenPerRun` runs',
  },
  depth: {
    code: 'capacity_exceeded',
    retryAfter: false,
    when: 'the causal tree would pass `maxCausalDepth`',
  },
} as const satisfies Record<RefusalRule, { code: ControlPlaneErrorCode; retryAfter: boolean; when: string }>;

/** code → HTTP status, from REFUSALS. */
export const ERROR_STATUS = Object.fromEntries(
  Object.entries(REFUSALS).map(([code, r]) => [code, r.status]),
) as { readonly [C in ControlPlaneErrorCode]: (typeof REFUSALS)[C]['status'] };

export function isRefusalCode(code: string): code is ControlPlaneErrorCode {
  return Object.hasOwn(REFUSALS, code);
}

/** The part of a request an offending field is in; its `path` is then relative to that part. */
export const ISSUE_LOCATIONS = ['query', 'path', 'header', 'cookie', 'body'] as const;
export type IssueLocation = (typeof ISSUE_LOCATIONS)[number];

/** One offending field of a schema refusal, as a client reads it (never the offending input echoed back). */
export interface ValidationIssue {
  /** zod's issue code (e.g. invalid_type, too_big, custom), run-model's refusals included (their zod codes kept). */
  readonly code: string;
  readonly path: readonly (string | number)[];
  readonly message: string;
  readonly in?: IssueLocation;
}

export class ControlPlaneError extends Error {
  readonly code: ControlPlaneErrorCode;
  readonly httpStatus: number;
  /** Machine-readable context; for 402/429 `details.rule` names the refusing admission rule. */
  readonly details: Readonly<Record<string, unknown>>;
  /**
   * A schema refusal's offending fields (`validation_failed`, `out_of_range`), rendered as the problem's
   * top-level `issues`. Set only by the one mapping, `validationRefusal` (services/boundary.ts).
   */
  readonly issues: readonly ValidationIssue[] | undefined;

  constructor(
    code: ControlPlaneErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    issues?: readonly ValidationIssue[],
  ) {
    super(message);
    this.name = 'ControlPlaneError';
    this.code = code;
    this.httpStatus = ERROR_STATUS[code];
    this.details = details;
    this.issues = issues;
  }

  toJSON(): {
    error: {
      code: ControlPlaneErrorCode;
      message: string;
      details: Record<string, unknown>;
      issues?: readonly ValidationIssue[];
    };
  } {
    return {
      error: {
        code: this.code,
        message: this.message,
        details: { ...this.details },
        ...(this.issues === undefined ? {} : { issues: this.issues }),
      },
    };
  }
}

export function isControlPlaneError(e: unknown): e is ControlPlaneError {
  return e instanceof ControlPlaneError;
}

export const notFound = (what: string, id: string): ControlPlaneError =>
  new ControlPlaneError('not_found', `${what} ${id} not found`, { id });

export const invalidCursor = (): ControlPlaneError =>
  new ControlPlaneError('invalid_cursor', 'this cursor was not issued by this API (pass nextCursor as is)');
