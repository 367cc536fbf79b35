// The service contract the HTTP layer codes against: zod inputs (parse at the boundary) and plain views.

import { type TenantPolicy as AdmissionTenantPolicy, CascadePolicy } from '@everdict/admission';
import {
  AttachChannel,
  AttachChannels,
  GraderList,
  type GroupStatus,
  MAX_SESSION_TTL_SEC,
  ownProtoKeys,
  type PlatformEvent,
  RunClass,
  RunKind,
  RunLifetime,
  RunStatus,
  type Score,
  type Scoring,
  type Usage,
} from '@everdict/run-model';
import { z } from 'zod';
import { INT4_MAX, INT8_MAX } from './column-bounds.js';

// The vocabulary is run-model's; these aliases only name its schemas where the service inputs use them.
export const RunKindInput = RunKind;
export const RunStatusInput = RunStatus;
export type RunStatusValue = RunStatus;
export const RunClassInput = RunClass;
export type RunClassValue = RunClass;
export const LifetimeInput = RunLifetime;
export const AttachInput = AttachChannel;
export const Role = z.enum(['member', 'admin']);
export type Role = z.infer<typeof Role>;

/** A free-form JSON object (a group's case, a selector filter): an own `__proto__` key is kept (run-model). */
const Json = ownProtoKeys(z.record(z.string(), z.unknown()));

// ---- the ledger's real bounds: inputs that land in a column carry its range (400 out_of_range beyond) ----
export { INT4_MAX, INT8_MAX } from './column-bounds.js';

/** An outbox position (`events.id`, a bigserial): decimal digits, at most the bigint maximum. */
export const EventPosition = z
  .string()
  .regex(/^\d{1,40}$/, 'an event position: decimal digits')
  .refine((s) => !/^\d{1,40}$/.test(s) || BigInt(s) <= INT8_MAX, {
    message: `an event position is at most ${INT8_MAX}`,
    params: { code: 'out_of_range' },
  });

/** Is `tz` a time zone this runtime knows (IANA names, `UTC`)? */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** A list cursor as the API issues it (opaque; decoded and checked by the service: 400 invalid_cursor). */
const Cursor = z.string().min(1).max(512);

/** A create's idempotency key (`requestId`, or the `Idempotency-Key` header of POST /runs). */
export const RequestId = z
  .string()
  .min(1)
  .max(200)
  .refine((id) => !id.startsWith('auto:'), 'the requestId prefix `auto:` is reserved');

/**
 * POST /runs body: a run-model RunSpec without `origin` (the server stamps who/why) and with placement
 * optional (analysis → inline; everything else → driver, which waits queued until a driver exists).
 * The subject is validated per kind by @everdict/run-model. A session's `ttlSec` is at most run-model's
 * MAX_SESSION_TTL_SEC (366 days): past it, `400 out_of_range` naming `ttlSec` (as a subscription's session
 * template is refused), before anything is admitted.
 */
const CreateRunFields = z.object({
  kind: RunKindInput,
  subject: z.unknown().default({}),
  lifetime: LifetimeInput.default('task'),
  class: RunClassInput.optional(),
  placement: z
    .object({
      where: z.enum(['inline', 'driver', 'runtime']),
      target: z.string().optional(),
      isolation: z.enum(['none', 'process', 'container', 'vm']).optional(),
      /** A network grant for the run's sandbox (runner kinds); absent: no network. */
      network: z.enum(['none', 'granted']).optional(),
    })
    .optional(),
  /** A set: each channel at most once (run-model's AttachChannels), refused 400 before anything is done. */
  attach: AttachChannels.default([]),
  /**
   * Caps of a delegated envelope this run opens (it and its descendants draw from it): run-model's
   * EnvelopeRef caps, with the ledger's column ranges (`cap_runs`, `in_flight_cap` are integers; `cap_tokens`
   * is a double, exact to 2^53). `inFlightCap`: runs of the slice admitted and unsettled at once.
   */
  envelope: z
    .object({
      capUsd: z.number().nonnegative().optional(),
      capTokens: z.int().nonnegative().optional(),
      capRuns: z.int().nonnegative().max(INT4_MAX).optional(),
      inFlightCap: z.int().positive().max(INT4_MAX).optional(),
    })
    .optional(),
  /** A group of the caller's tenant (another tenant's, or none: 404). */
  group: z.object({ id: z.string().min(1).max(200), role: z.enum(['case', 'turn', 'child']) }).optional(),
  lineage: z
    .object({
      retryOf: z.string().optional(),
      rescoreOf: z.string().optional(),
      forkedFrom: z.string().optional(),
    })
    .optional(),
  /** Hard expiry (sessions need one): an ISO timestamp, or ttlSec from now. */
  expiresAt: z.iso.datetime({ offset: true }).optional(),
  /** At most 2^31 − 1 s (68 years): `now + ttlSec` stays a timestamp and `ttlSec × 1000` an exact integer. */
  ttlSec: z.int().positive().max(INT4_MAX).optional(),
  /**
   * Idempotency key: the same (tenant, requestId) returns the first run instead of a second. `auto:` is
   * reserved: a create without one is keyed `auto:<runId>` and is never recorded (nothing can repeat it).
   */
  requestId: RequestId.optional(),
});
export const CreateRunInput = CreateRunFields.superRefine((v, ctx) => {
  if (v.lifetime === 'session' && v.ttlSec !== undefined && v.ttlSec > MAX_SESSION_TTL_SEC)
    ctx.addIssue({
      code: 'too_big',
      origin: 'number',
      maximum: MAX_SESSION_TTL_SEC,
      inclusive: true,
      path: ['ttlSec'],
      message: `Too big: a session is held open at most ${MAX_SESSION_TTL_SEC} seconds (366 days)`,
    });
});
export type CreateRunInput = z.input<typeof CreateRunInput>;

/** Attribution that never comes from the request body (it rides a trusted header / the caller's identity). */
export interface CreateRunContext {
  causedByRunId?: string;
  cause?: 'member' | 'schedule' | 'event' | 'run' | 'ci' | 'api';
  eventId?: string;
  eventKind?: string;
  scheduleId?: string;
  subscriptionId?: string;
  /** A tighter causal-depth bound from the cause (a subscription's maxDepth), for admission's depth guard. */
  maxCausalDepth?: number;
}

export const ListRunsQuery = z.object({
  kind: RunKindInput.optional(),
  status: RunStatusInput.optional(),
  lifetime: LifetimeInput.optional(),
  groupId: z.string().optional(),
  causedBy: z.string().optional(),
  createdBy: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: Cursor.optional(),
});
export type ListRunsQuery = z.input<typeof ListRunsQuery>;

export interface Principal {
  tenantId: string;
  keyId: string;
  role: Role;
  /** Who acts: `key_…` ids for API keys. Stamped on runs as createdBy / origin.actor. */
  actor: string;
}

/** The key id of the service principal (the internal routes, behind the service token): never an API key's. */
export const SERVICE_KEY_ID = 'internal';

/** The principal an internal call acts as: the agent service, inside the named tenant. */
export function servicePrincipal(tenantId: string): Principal {
  return { tenantId, keyId: SERVICE_KEY_ID, role: 'member', actor: 'service:agent' };
}

export function isServicePrincipal(p: Principal): boolean {
  return p.keyId === SERVICE_KEY_ID;
}

/** A score row: run-model's `Score` (one per settled run × grader; `rescoreOf` names the scoring it re-does). */
export type ScoreView = Score;

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface AdmissionView {
  decision: 'admitted' | 'duplicate';
  class: RunClassValue;
  envelopeId: string;
  position: { tenantAhead: number; tenantQueued: number } | null;
}

/** An outbox event as subscriptions see it (run-model PlatformEvent); `id` is the outbox position. */
export type EventView = PlatformEvent;

// ---- groups ----
/**
 * Graders are run-model's (`exit_code`, `output_regex`, `output_contains`, `json_field_equals`,
 * `numeric_threshold`, `judge`): a non-empty list with unique names. Nothing here redefines them.
 */
export const GraderSpecs = GraderList;
export type GraderSpec = z.input<typeof GraderList>[number];

export const CreateGroupInput = z
  .object({
    kind: z.enum(['experiment', 'batch']),
    label: z.string().max(200).default(''),
    spec: CreateRunInput,
    /** N runs of one spec … */
    repeat: z.number().int().min(1).max(10_000).optional(),
    /**
     * … or one run per case: an eval case becomes the subject's `caseSpec` (its `caseId`/`id` the `caseId`, its
     * `expected` the subject's `expected`, held back from the harness); another kind's is merged in as `case`.
     */
    cases: z.array(Json).min(1).max(10_000).optional(),
    requestId: z.string().min(1).max(200).optional(),
  })
  .refine((g) => (g.repeat === undefined) !== (g.cases === undefined), 'exactly one of repeat or cases');
export type CreateGroupInput = z.input<typeof CreateGroupInput>;

export interface GroupView {
  id: string;
  tenantId: string;
  kind: 'experiment' | 'scorecard' | 'conversation' | 'batch';
  label: string;
  spec: Record<string, unknown>;
  runIds: string[];
  /**
   * run-model's group rollup (`partial` = some succeeded, some not); `empty` before any run exists. `usage`: what
   * the group's runs used so far, summed (run-model's `addUsage`), their reported CPU time beside it.
   */
  rollup: {
    total: number;
    byStatus: Record<string, number>;
    status: GroupStatus | 'empty';
    usage: Usage & { cpuTimeMs: number };
  };
  scoring: ScoringView | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** One application of graders to a group: run-model's `Scoring` (aggregate per grader, skipped runs). */
export type ScoringView = Scoring;

export const ScoreGroupInput = z.object({
  graders: GraderSpecs,
  /** The scoring this one re-does (same group): new rows linked by `rescoreOf`; the old ones stay. */
  rescoreOf: z.string().min(1).max(200).optional(),
});
export type ScoreGroupInput = z.input<typeof ScoreGroupInput>;
export const PromoteGroupInput = z.object({
  graders: GraderSpecs,
  label: z.string().max(200).optional(),
});
export type PromoteGroupInput = z.input<typeof PromoteGroupInput>;
export const ListGroupsQuery = z.object({
  kind: z.enum(['experiment', 'scorecard', 'conversation', 'batch']).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: Cursor.optional(),
});
export type ListGroupsQuery = z.input<typeof ListGroupsQuery>;

// ---- subscriptions / schedules ----
export const CreateSubscriptionInput = z
  .object({
    name: z.string().min(1).max(200),
    /** Event selector: kind (exact, or prefix with `*`, e.g. `run.*`) + payload equality filter. */
    selector: z.object({ kind: z.string().min(1), filter: Json.default({}) }).optional(),
    /** A schedule: the subscription listens to its own `schedule.fired` slots. */
    schedule: z
      .object({
        cron: z.string().min(1).max(200),
        /** An IANA time zone (`Europe/Berlin`, `UTC`). */
        timezone: z.string().max(100).refine(isTimeZone, 'an IANA time zone').default('UTC'),
      })
      .optional(),
    /** Checked when the subscription is created, exactly as a firing will check it. */
    runSpec: CreateRunInput,
    /** `cooldown_sec` is an integer column. */
    cooldownSec: z.int().min(0).max(INT4_MAX).default(0),
    maxDepth: z.number().int().min(0).max(32).default(3),
    enabled: z.boolean().default(true),
  })
  .refine(
    (s) => (s.selector === undefined) !== (s.schedule === undefined),
    'exactly one of selector or schedule',
  );
export type CreateSubscriptionInput = z.input<typeof CreateSubscriptionInput>;

export interface SubscriptionView {
  id: string;
  tenantId: string;
  name: string;
  selector: { kind: string; filter: Record<string, unknown> };
  schedule: { cron: string; timezone: string } | null;
  runSpec: Record<string, unknown>;
  cooldownSec: number;
  maxDepth: number;
  /** False when disabled, by a PATCH or because the creator key was revoked (`disabledReason`). */
  enabled: boolean;
  /** Why it does not fire: `disabled` (PATCH `enabled: false`), `key_revoked` (its creator key is revoked). */
  disabledReason: 'disabled' | 'key_revoked' | null;
  lastFiredAt: string | null;
  /** An enabled schedule's next slot (null: not a schedule, or not firing). */
  nextFireAt: string | null;
  createdBy: string;
  createdAt: string;
}

/** A page of a trigger's firings: newest first; `before` = the last item's `eventId` for the next page. */
export const FiringsQuery = z.object({
  before: EventPosition.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
});
export type FiringsQuery = z.input<typeof FiringsQuery>;

/** One event a trigger matched: the run it created, or why it created none. */
export interface FiringView {
  /** The outbox event it answered (a decimal event id). */
  eventId: string;
  at: string;
  outcome: 'created' | 'refused';
  runId: string | null;
  /**
   * Why not: `code` is the causation rule (`self_cause`, `cooldown`, `disabled`), `key_revoked`, `invalid_spec`,
   * or the gate's refusal code (`envelope_exhausted`, `capacity_exceeded`, …) with its `rule`; `detail` in words.
   */
  refusal: { code: string; rule: string | null; detail: string | null } | null;
}

export interface FiringPage {
  items: FiringView[];
  /** Pass as `before` for older firings; null on the last page. */
  nextBefore: string | null;
}

// ---- agent bridge: services/agent-run-event.ts ----
export { AgentRunEventInput } from './agent-run-event.js';

// ---- keys / tenants ----
/** What a tenant admin may set of the tenant's policy (PATCH /tenant/policy); the rest is the deployment's. */
export const TenantPolicyPatch = z
  .strictObject({
    cascade: CascadePolicy.optional(),
    /** Sessions: the longest a session may be held open from now (a touch extends up to it). */
    maxSessionTtlSec: z
      .int()
      .positive()
      .max(366 * 24 * 60 * 60)
      .optional(),
    /** Sessions: USD per hour open or parked, charged against the budget at settle. */
    sessionUsdPerHour: z.number().nonnegative().max(1_000_000).optional(),
  })
  .refine((p) => Object.values(p).some((v) => v !== undefined), { message: 'nothing to change' });
export type TenantPolicyPatch = z.input<typeof TenantPolicyPatch>;
/** The tenant's policy as admission holds it. */
export type TenantPolicyView = AdmissionTenantPolicy;

export const CreateKeyInput = z.strictObject({
  role: Role.default('member'),
  label: z.string().max(200).default(''),
});
export type CreateKeyInput = z.input<typeof CreateKeyInput>;
export interface ApiKeyView {
  id: string;
  tenantId: string;
  role: Role;
  label: string;
  createdAt: string;
  revokedAt: string | null;
}
export interface CreatedKeyView extends ApiKeyView {
  /** The raw key: shown exactly once, never stored. */
  key: string;
}
