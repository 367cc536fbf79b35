// Run — one activation of some executable — and RunSpec, what a client submits to create one.
import { z } from 'zod';
import { parseOrThrow, RunModelError, schemaRefusal } from './errors.js';
import type { RunQueued } from './facts.js';
import { Origin } from './origin.js';
import { emptyOutputs, RunError, RunOutputs, TrajectoryRef } from './outputs.js';
import { Id, Timestamp, Tokens, toMillis, Usd } from './primitives.js';
import { MAX_SESSION_TTL_SEC } from './session.js';
import { checkKindedSubject } from './subject.js';
import { EMPTY_USAGE, Usage } from './usage.js';
import {
  AttachChannel,
  GroupRole,
  isTerminalStatus,
  PlacementIsolation,
  PlacementWhere,
  RunClass,
  RunKind,
  RunLifetime,
  RunStatus,
} from './vocabulary.js';

/**
 * placement = { where, target?, isolation?, network? }: whose compute, how isolated, and whether its sandbox
 * is granted the network (`granted`; absent or `none`: no network at all). A field, not a kind; part of the
 * run's grants, so the record binds it.
 */
export const Placement = z.strictObject({
  where: PlacementWhere,
  target: Id.optional(),
  isolation: PlacementIsolation.optional(),
  network: z.enum(['none', 'granted']).optional(),
});
export type Placement = z.infer<typeof Placement>;

/**
 * The causal budget this run draws from and delegates (not the ownership TaskEnvelope). `inFlightCap`: how
 * many runs drawing from it may be admitted and unsettled at once (the run itself included).
 */
export const EnvelopeRef = z.strictObject({
  id: Id,
  capUsd: Usd.optional(),
  capTokens: Tokens.optional(),
  capRuns: z.int().nonnegative().optional(),
  inFlightCap: z.int().positive().optional(),
});
export type EnvelopeRef = z.infer<typeof EnvelopeRef>;

/** The orchestration this run belongs to, and its role there. */
export const GroupRef = z.strictObject({ id: Id, role: GroupRole });
export type GroupRef = z.infer<typeof GroupRef>;

/** This run is a retry of, a re-score of, or a fork of another run. */
export const Lineage = z.strictObject({
  retryOf: Id.optional(),
  rescoreOf: Id.optional(),
  forkedFrom: Id.optional(),
});
export type Lineage = z.infer<typeof Lineage>;

/**
 * The channels a submitted run asks to expose: a set (each channel at most once), so never longer than the
 * channel list. Checked where runs are submitted (RunSpec, RunTemplate); a stored `Run` is read as it is.
 */
export const AttachChannels = z
  .array(AttachChannel)
  .max(AttachChannel.options.length)
  .refine((channels) => new Set(channels).size === channels.length, 'each attach channel at most once');

type Issue = (ctx: z.RefinementCtx, path: string, message: string) => void;
const issue: Issue = (ctx, path, message) => ctx.addIssue({ code: 'custom', path: [path], message });

const templateShape = {
  kind: RunKind,
  subject: z.unknown(),
  placement: Placement,
  lifetime: RunLifetime.default('task'),
  attach: AttachChannels.default([]),
  class: RunClass.optional(),
  envelope: EnvelopeRef.optional(),
  group: GroupRef.optional(),
  lineage: Lineage.optional(),
  expiresAt: Timestamp.optional(),
};
const specShape = { ...templateShape, origin: Origin };

/** A session is held open until closed or expired: it must carry a hard expiresAt (the reaper's deadline). */
function sessionNeedsExpiry(
  v: { lifetime: RunLifetime; expiresAt?: string | undefined },
  ctx: z.RefinementCtx,
) {
  if (v.lifetime === 'session' && v.expiresAt === undefined) {
    issue(ctx, 'expiresAt', 'a session run needs a hard expiresAt');
  }
}

/**
 * What a client submits: kind + subject, origin, placement, lifetime (default task), attach (default
 * []), and optionally class, envelope, group, lineage, expiresAt. The ledger fills in the rest.
 */
export const RunSpec = z.strictObject(specShape).transform((v, ctx) => {
  sessionNeedsExpiry(v, ctx);
  const kinded = checkKindedSubject(v.kind, v.subject, ctx);
  return kinded ? { ...v, ...kinded } : z.NEVER;
});
export type RunSpec = z.output<typeof RunSpec>;
export type RunSpecInput = z.input<typeof RunSpec>;

/**
 * A RunSpec without its origin: what a subscription (or a schedule) holds and stamps an origin onto
 * each time it fires. Its session expiry is relative to the firing, so none is required here.
 */
export const RunTemplate = z.strictObject(templateShape).transform((v, ctx) => {
  const kinded = checkKindedSubject(v.kind, v.subject, ctx);
  return kinded ? { ...v, ...kinded } : z.NEVER;
});
export type RunTemplate = z.output<typeof RunTemplate>;
export type RunTemplateInput = z.input<typeof RunTemplate>;

/** Alias: a new run, as submitted. */
export const NewRun = RunSpec;
export type NewRun = RunSpec;

/**
 * The full record the ledger holds. Invariants: session ⇒ expiresAt; failed ⇒ error; settledAt is set
 * exactly when the status is terminal; running, awaiting_input and succeeded runs carry startedAt
 * (a run cancelled or failed while queued never started).
 */
export const Run = z
  .strictObject({
    ...specShape,
    id: Id,
    tenant: Id,
    status: RunStatus,
    lifetime: RunLifetime,
    attach: z.array(AttachChannel),
    class: RunClass,
    trajectory: TrajectoryRef.optional(),
    outputs: RunOutputs,
    usage: Usage,
    error: RunError.optional(),
    createdBy: Id,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    startedAt: Timestamp.optional(),
    settledAt: Timestamp.optional(),
    /** How many times the run was started (each start is an attempt; a lost one requeues it). */
    attempt: z.number().int().min(0).optional(),
  })
  .transform((v, ctx) => {
    sessionNeedsExpiry(v, ctx);
    if (v.status === 'failed' && v.error === undefined) issue(ctx, 'error', 'a failed run carries its error');
    if (isTerminalStatus(v.status) !== (v.settledAt !== undefined)) {
      issue(ctx, 'settledAt', 'settledAt is set exactly when the run is terminal');
    }
    const hasRun = v.status === 'running' || v.status === 'awaiting_input' || v.status === 'succeeded';
    if (hasRun && v.startedAt === undefined)
      issue(ctx, 'startedAt', 'a run that has started carries startedAt');
    if (toMillis(v.updatedAt) < toMillis(v.createdAt))
      issue(ctx, 'updatedAt', 'updatedAt precedes createdAt');
    const kinded = checkKindedSubject(v.kind, v.subject, ctx);
    return kinded ? { ...v, ...kinded } : z.NEVER;
  });
export type Run = z.output<typeof Run>;
export type RunInput = z.input<typeof Run>;

/**
 * Default scheduling class when neither the spec nor admission chose one: a group's cases are batch,
 * a member waiting is interactive, everything caused by a schedule, event, run, CI or the API is
 * background — autonomous fan-out never starves a person's click.
 */
export function defaultRunClass(spec: Pick<RunSpec, 'origin' | 'group'>): RunClass {
  if (spec.group?.role === 'case') return 'batch';
  return spec.origin.cause === 'member' ? 'interactive' : 'background';
}

export interface CreateRunContext {
  id: string;
  tenant: string;
  createdBy: string;
  now: string;
  /** The class admission assigned; wins over the default but not over the spec's own. */
  class?: RunClass;
}

/**
 * A new run, born queued, plus its `run.queued` fact. Parses the spec (invalid_input on failure); its
 * expiresAt must be in the future, and a session's at most MAX_SESSION_TTL_SEC away (a session that far
 * off has no hard expiry in any sense the reaper could honour).
 */
export function createRun(spec: RunSpecInput, ctx: CreateRunContext): { run: Run; facts: [RunQueued] } {
  return createRunFromSpec(parseOrThrow(RunSpec, spec, 'run spec'), ctx);
}

/**
 * `createRun` for a spec RunSpec already produced (a caller that parsed it to refuse bad input before
 * admission, then adds only `class`/`envelope`): not parsed again — the run it builds still is (`Run`,
 * whose shape holds the spec's fields, `class` and `envelope` included).
 */
export function createRunFromSpec(parsed: RunSpec, ctx: CreateRunContext): { run: Run; facts: [RunQueued] } {
  if (parsed.expiresAt !== undefined && toMillis(parsed.expiresAt) <= toMillis(ctx.now)) {
    throw new RunModelError('invalid_input', 'expiresAt is not in the future', {
      expiresAt: parsed.expiresAt,
    });
  }
  if (
    parsed.lifetime === 'session' &&
    parsed.expiresAt !== undefined &&
    toMillis(parsed.expiresAt) - toMillis(ctx.now) > MAX_SESSION_TTL_SEC * 1000
  ) {
    // A schema refusal of the spec's field (a custom issue naming itself out_of_range: the value is past its
    // range, though no plain number), so a caller can name the field its client sent.
    throw schemaRefusal(
      'run spec',
      [
        {
          code: 'custom',
          path: ['expiresAt'],
          message: `a session is held open at most ${MAX_SESSION_TTL_SEC} seconds (366 days)`,
          params: { code: 'out_of_range', maximum: MAX_SESSION_TTL_SEC },
        },
      ],
      { expiresAt: parsed.expiresAt, maxSessionTtlSec: MAX_SESSION_TTL_SEC },
    );
  }
  const run = parseOrThrow(
    Run,
    {
      ...parsed,
      id: ctx.id,
      tenant: ctx.tenant,
      status: 'queued',
      class: parsed.class ?? ctx.class ?? defaultRunClass(parsed),
      outputs: emptyOutputs(),
      usage: { ...EMPTY_USAGE },
      createdBy: ctx.createdBy,
      createdAt: ctx.now,
      updatedAt: ctx.now,
    },
    'run',
  );
  const fact: RunQueued = {
    type: 'run.queued',
    runId: run.id,
    tenant: run.tenant,
    kind: run.kind,
    at: ctx.now,
    cause: run.origin.cause,
    class: run.class,
    lifetime: run.lifetime,
    ...(run.origin.causedByRunId !== undefined ? { causedByRunId: run.origin.causedByRunId } : {}),
  };
  return { run, facts: [fact] };
}
