// The run lifecycle in one place: admit + create, and every transition — each saved with its facts (outbox)
// and its record segments in ONE transaction, with the admission slot settled in the same transaction.
import {
  type AdmissionDecision,
  type AdmissionRequest,
  type Admitted,
  type CommitResult,
  decide,
  parseAdmissionRequest,
} from '@everdict/admission';
import { type createRun, createRunFromSpec, RunSpec } from '@everdict/run-model';
import { commitCaused } from '../admission-store/sql/causal-tree.js';
import { autoRequestId } from '../admission-store/sql/rows.js';
import { abort, atomically, StepAborted } from '../admission-store/sql/scope.js';
import { PgAdmissionStore } from '../admission-store/sql/store.js';
import { agentRunSpec } from '../agents/activation.js';
import type { Executor, Tx } from '../db/tx.js';
import { ADMISSION_RULES, ControlPlaneError } from '../errors.js';
import { appendEvents } from '../ledger/events.js';
import { recordIdentity } from '../ledger/records.js';
import { findRun, type RunRow, runDocument, runToRow, withSlot } from '../ledger/runs.js';
import { asControlPlaneError } from './boundary.js';
import { type Deps, DISPATCH_CHANNEL } from './context.js';
import { parseCreateInput } from './parsed-create.js';
import { factsToEvents } from './transition.js';
import type { AdmissionView, CreateRunContext, CreateRunInput } from './types.js';

export interface Actor {
  tenant: string;
  actor: string;
}

export function refusalToError(
  deps: Deps,
  kind: string,
  d: Extract<AdmissionDecision, { outcome: 'refused' }>,
): ControlPlaneError {
  deps.observe.admission(
    d.status === 402 ? 'refused_402' : d.status === 429 ? 'refused_429' : 'refused_other',
    kind,
    d.rule,
  );
  return new ControlPlaneError(ADMISSION_RULES[d.rule].code, d.detail, { rule: d.rule, retry: d.retry });
}

/** Thrown by createRunTx in `ownTx` mode when the admission raced: roll the transaction back and call again. */
export class AdmissionRaced extends Error {
  constructor() {
    super('admission raced a concurrent writer');
  }
}

/** A parsed create: the admission request and everything needed to build the run once admitted. */
export interface PreparedCreate {
  readonly who: Actor;
  readonly kind: string;
  readonly requestId: string | undefined;
  readonly now: Date;
  readonly runId: string;
  readonly request: AdmissionRequest;
  readonly causedByRunId: string | undefined;
  build(decision: Admitted): { run: Run; facts: RunFacts };
}
type Run = ReturnType<typeof createRun>['run'];
type RunFacts = ReturnType<typeof createRun>['facts'];

/** Parse and validate one create (throws the 400s); no I/O. */
export function prepareCreate(
  deps: Deps,
  who: Actor,
  raw: CreateRunInput,
  ctx: CreateRunContext = {},
): PreparedCreate {
  const input = asControlPlaneError(() => parseCreateInput(raw)); // parsed once: at the edge, or here
  const now = deps.clock();
  const at = now.toISOString();
  const runId = deps.ids('run');
  const cause = ctx.cause ?? (ctx.causedByRunId ? 'run' : 'member');
  const origin = {
    cause,
    ...(cause === 'member' || cause === 'api' || cause === 'ci' ? { actor: who.actor } : {}),
    ...(ctx.scheduleId ? { scheduleId: ctx.scheduleId } : {}),
    ...(ctx.eventId ? { eventId: ctx.eventId } : {}),
    ...(ctx.eventKind ? { eventKind: ctx.eventKind } : {}),
    ...(ctx.causedByRunId ? { causedByRunId: ctx.causedByRunId } : {}),
    ...(ctx.subscriptionId ? { subscriptionId: ctx.subscriptionId } : {}),
  };
  const placement =
    input.placement ??
    (input.kind === 'analysis'
      ? { where: 'inline', isolation: 'none' }
      : { where: 'driver', isolation: 'process' });
  if (input.kind === 'analysis' && placement.where !== 'inline') {
    throw new ControlPlaneError('bad_request', 'analysis runs execute inline');
  }
  // Request validation against the deployment, before admission: a run nothing can ever execute is 422.
  deps.executors.assertPlaceable(input.kind, placement);
  const expiresAt =
    input.expiresAt ??
    (input.ttlSec ? new Date(now.getTime() + input.ttlSec * 1000).toISOString() : undefined);
  const specBase = {
    kind: input.kind,
    subject: input.subject,
    origin,
    placement,
    lifetime: input.lifetime,
    attach: input.attach,
    ...(input.group ? { group: input.group } : {}),
    ...(input.lineage ? { lineage: input.lineage } : {}),
    ...(expiresAt ? { expiresAt } : {}),
  };
  const spec = asControlPlaneError(() => RunSpec.parse(specBase));
  const subject = spec.subject as Record<string, unknown>;
  const caps = input.envelope;
  const request = asControlPlaneError(() =>
    parseAdmissionRequest({
      requestId: input.requestId ?? autoRequestId(runId),
      runId,
      tenant: who.tenant,
      kind: input.kind,
      cause,
      ...(input.class ? { class: input.class } : {}),
      lifetime: input.lifetime,
      ...(ctx.causedByRunId ? { causedByRunId: ctx.causedByRunId } : {}),
      ...(ctx.maxCausalDepth !== undefined ? { maxCausalDepth: ctx.maxCausalDepth } : {}),
      ...(input.kind === 'agent' && typeof subject.agentId === 'string' ? { agentId: subject.agentId } : {}),
      ...(caps
        ? {
            envelope: {
              id: deps.ids('env'),
              caps: { usd: caps.capUsd, tokens: caps.capTokens, runs: caps.capRuns },
              ...(caps.inFlightCap !== undefined ? { inFlightCap: caps.inFlightCap } : {}),
            },
          }
        : {}),
      ...(input.ttlSec ? { expectedDurationMs: input.ttlSec * 1000 } : {}),
    }),
  );
  return {
    who,
    kind: input.kind,
    requestId: input.requestId,
    now,
    runId,
    request,
    causedByRunId: ctx.causedByRunId,
    build: (decision) => {
      const envelope = {
        id: decision.envelopeId,
        ...(caps?.capUsd !== undefined ? { capUsd: caps.capUsd } : {}),
        ...(caps?.capTokens !== undefined ? { capTokens: caps.capTokens } : {}),
        ...(caps?.capRuns !== undefined ? { capRuns: caps.capRuns } : {}),
        ...(caps?.inFlightCap !== undefined ? { inFlightCap: caps.inFlightCap } : {}),
      };
      // The spec was parsed above (its 400s before admission); only class and envelope are added, and the
      // run built from it is parsed whole by createRunFromSpec.
      return asControlPlaneError(() =>
        createRunFromSpec(
          { ...spec, class: decision.class, envelope },
          { id: runId, tenant: who.tenant, createdBy: who.actor, now: at },
        ),
      );
    },
  };
}

/** The run row for an admitted run. */
const identityOf = (run: Run, decision: Admitted) => ({
  envelopeId: decision.envelopeId,
  ...recordIdentity(run),
});

export function rowOf(run: Run, decision: Admitted) {
  return runToRow(run, identityOf(run, decision));
}

/** The slot's depth and start an admitted run's row is read with (a session runs from its admission). */
export const slotOfDecision = (d: Admitted) => ({
  depth: d.depth,
  startedMs: d.lane === 'session' ? d.admittedAt : null,
});

/** The row as a JSON document (for `insertRunsSql`). */
export function documentOf(run: Run, decision: Admitted) {
  return runDocument(run, identityOf(run, decision));
}

/**
 * Admit and create one run inside `tx`. A repeated requestId returns the first run (decision 'duplicate').
 * `ownTx`: the caller's transaction holds nothing else and commits right after — the admission is written
 * without a savepoint (the hot rows are then held for one statement + the commit) and a race throws
 * AdmissionRaced instead of retrying inside the transaction.
 */
export async function createRunTx(
  tx: Tx,
  deps: Deps,
  who: Actor,
  raw: CreateRunInput,
  ctx: CreateRunContext = {},
  opts: { ownTx?: boolean } = {},
): Promise<{ row: RunRow; admission: AdmissionView }> {
  // An agent activation (conversation, subscription) is completed from the registry: version, envelope.
  const prep = prepareCreate(deps, who, await agentRunSpec(tx, who.tenant, raw), ctx);
  const { request, now } = prep;
  const input = { kind: prep.kind, requestId: prep.requestId };
  const store = new PgAdmissionStore(tx);
  const key = {
    tenant: who.tenant,
    requestId: request.requestId,
    causedByRunId: request.causedByRunId,
    agentId: request.agentId,
    sliceId: request.envelope?.id,
  };
  // The gate decides first; then the run row and its facts are written; the admission commit — which
  // takes the tenant's hot counter rows — goes last, so those locks are held for the fewest round trips.
  for (let attempt = 0; attempt < 8; attempt++) {
    const snap = await store.loadAdmission(key);
    const verdict = await asControlPlaneError(async () => decide(snap, request, now.getTime()));
    if ('prior' in verdict) return duplicateOf(tx, who.tenant, verdict.prior, input.requestId);
    if (!('plan' in verdict)) throw refusalToError(deps, input.kind, verdict.decision);
    const decision = verdict.decision;
    const { run, facts } = prep.build(decision);
    const write = async (t: Tx): Promise<{ row: RunRow | null; result: CommitResult }> => {
      const row = withSlot(
        await t.insertInto('runs').values(rowOf(run, decision)).returningAll().executeTakeFirstOrThrow(),
        slotOfDecision(decision),
      );
      await appendEvents(t, factsToEvents(facts), DISPATCH_CHANNEL);
      const committed = await commitCaused(t, verdict.plan).catch((e: unknown) => {
        if (e instanceof StepAborted) return e.result as CommitResult;
        throw e;
      });
      if (committed.status !== 'committed') return abort({ row: null, result: committed });
      return { row, result: committed };
    };
    const out = opts.ownTx
      ? await write(tx).catch((e: unknown) => {
          if (e instanceof StepAborted) {
            const r = (e.result as { result: CommitResult }).result;
            if (r.status === 'raced' || r.status === 'duplicate') throw new AdmissionRaced();
            return { row: null, result: r };
          }
          throw e;
        })
      : await atomically(tx, write);
    if (out.row) {
      const admission: AdmissionView = {
        decision: 'admitted',
        class: decision.class,
        envelopeId: decision.envelopeId,
        position: decision.position,
      };
      deps.observe.admission('admitted', input.kind);
      return { row: out.row, admission };
    }
    if (out.result.status === 'duplicate')
      return duplicateOf(tx, who.tenant, out.result.decision, input.requestId);
    if (out.result.status !== 'raced')
      throw new ControlPlaneError('conflict', `admission refused: ${out.result.status}`);
  }
  throw new ControlPlaneError('conflict', 'admission kept racing concurrent writers; retry');
}

export async function duplicateOf(
  tx: Executor,
  tenant: string,
  prior: Admitted,
  requestId: string | undefined,
) {
  const row = await findRun(tx, tenant, prior.runId);
  if (!row) throw new ControlPlaneError('conflict', `request ${requestId} is still being admitted`);
  const admission: AdmissionView = {
    decision: 'duplicate',
    class: prior.class,
    envelopeId: prior.envelopeId,
    position: prior.position,
  };
  return { row, admission };
}

export { factsToEvents, type TransitionExtras, transitionTx } from './transition.js';
