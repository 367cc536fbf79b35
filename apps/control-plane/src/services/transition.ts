// Every run transition: the status machine's {patch, facts} saved with its record segments (an interval's
// attestation, a park, a resume, a close) and its outbox facts in ONE transaction; the admission slot is
// settled in the same transaction, so a run settles exactly once across replicas.
import {
  eventFromFact,
  isTerminalStatus as isTerminal,
  ReportedUsage,
  type RunEvent,
  type RunFact,
  type RunModelError,
  totalTokens,
  transition,
} from '@everdict/run-model';
import {
  type Account,
  type AttestationBody,
  encodeAttestationBody,
  type Hex,
  type Operation,
  type WireSegment,
} from '@everdict/runrecord';
import type { Insertable, Selectable } from 'kysely';
import { PgAdmissionLanes } from '../admission-store/sql/lanes.js';
import { type SlotSettlement, settleSlots } from '../admission-store/sql/settle.js';
import { json, numeric } from '../db/numeric.js';
import type { AttestationsTable, RunsTable } from '../db/schema.js';
import type { Tx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { appendEvents, type NewEvent } from '../ledger/events.js';
import { resumeManifest, runManifest } from '../ledger/manifest.js';
import { appendSegments, NO_CALLS, plannedSegments, sealInterval, segmentsOf } from '../ledger/records.js';
import { lockRun, type RunRow, rowToRun, withSlot } from '../ledger/runs.js';
import type { AttestedWrites, RunSet } from './attested-writes.js';
import { asControlPlaneError, runModelValidationRefusal } from './boundary.js';
import { type Deps, DISPATCH_CHANNEL, INLINE_LANE_KINDS, nowIso } from './context.js';

export function factsToEvents(facts: readonly RunFact[]) {
  return facts.map((f) => {
    const e = eventFromFact(f, 'pending');
    return { tenant: e.tenant, kind: e.kind, runId: e.runId, at: e.at, data: e.data };
  });
}

export interface TransitionExtras {
  outputs?: Record<string, unknown>;
  /**
   * What the executor reported the run used (an agent's report, a runner's completion, a session's price):
   * checked here against run-model's `ReportedUsage` — the one place every reported usage passes — before
   * anything is read or written: a cost past `MAX_USAGE_USD` (its sum per envelope would overflow float8 at
   * settle), a token count past a safe integer, a negative or non-finite measure is 400 (`out_of_range`; a
   * non-integer count, `bad_request`).
   */
  usage?: Record<string, number>;
  /** For an interval that ends here: what the interval produced and the energy model. */
  interval?: { journal?: unknown; watts?: number; meter?: string; exitCode?: number };
  /**
   * The calls the executor reported for the interval that ends here. Absent: an inline kind (analysis)
   * dispatched nothing (`NO_CALLS`, observed by the control plane, its executor); any other kind carries no
   * account — nothing was reported, so nothing is claimed (verdict `no_verdict`).
   */
  account?: Account;
  /**
   * awaiting_input / suspended: the snapshot parked (an agent's transcript address) — required, never
   * invented; resume_input: the snapshot OFFERED, checked by runrecord against the one parked.
   */
  transcript?: string;
  /**
   * The environment manifest at a park (the parking environment's) or at a resume (the RESUMING
   * environment's). Absent → the run's own manifest (kind + subject).
   */
  manifest?: string;
  /**
   * An interval attested by its executor (a runner): the body it signed, checked by the caller against the
   * run, stored as is and appended with its execute op (runrecord checks binding and signature on append).
   * Used instead of an attestation the control plane would seal itself.
   */
  attested?: { address: Hex; body: AttestationBody; account?: Account };
  /**
   * An image park (a session's workspace snapshot, by BLAKE3 address) instead of a transcript: parked at
   * awaiting_input, OFFERED at resume_input. `idleUj` is the park's estimated idle energy (never zero).
   */
  image?: { root: Hex; idleUj?: bigint };
  /**
   * When the interval that ends here stopped, if before now (epoch ms): a session the reaper settles late
   * stopped at its deadline, where its money stops too. Clamped to [the interval's start, now]; the
   * transition itself (its facts, `endedAt`) is still now.
   */
  intervalEndMs?: number;
  /**
   * Nothing of the interval that ends here was observed: a parked session resumed only to be closed, in the
   * same transaction (it ran nothing), or a run whose executor was lost (the sweep saw no end of it). No
   * executed segment is sealed (`resumed` → `closed`, or the record just closes): the record claims no interval
   * it did not hold.
   */
  nothingRan?: boolean;
  /** The record's close reason when it is not the status's own (a lost host closes `abandoned`). */
  closeReason?: 'completed' | 'abandoned' | 'failed' | 'cancelled';
  /** resume_input: the park's idle energy as its executor's model prices it (agents/energy.ts); estimated. */
  idleUj?: bigint;
  /** The run's row as the caller locked it (FOR UPDATE) in this transaction: not read again. */
  locked?: RunRow;
  /** The `locked` run's record segments, read under that lock in this transaction: not read again. */
  segments?: WireSegment[];
  /**
   * Where to put the transition's events instead of inserting them now: the caller inserts them (in order,
   * in this transaction) once for several transitions. Not for a running run's cancel (it NOTIFYs dispatch).
   */
  deferEvents?: NewEvent[];
  /**
   * Where to put a terminal transition's admission settle instead of making it now: the caller settles
   * them (`settleSlots`, one statement) in this transaction, after every run it locked.
   */
  deferSettles?: SlotSettlement[];
  /**
   * An attested interval's write (its body, segments and the run's new state) collected here instead of
   * made now: the caller makes every collected write in ONE statement (`AttestedWrites.flush`) in this
   * transaction, before anything else reads those runs. The row `transitionTx` then answers is the row as
   * it was BEFORE the transition — the written one is `flush`'s.
   */
  deferAttested?: AttestedWrites;
}

/**
 * Kinds a runner executes and attests (issue 13): an interval of theirs is recorded only from the runner's
 * signed attestation. One that ends without it (a cancel, a lost runner) leaves no `executed` segment —
 * the control plane did not run it and invents no evidence for it; the record just closes.
 */
const RUNNER_ATTESTED_KINDS = new Set(['command', 'eval']);

/**
 * Whether the control plane seals the interval that ends here itself — the one rule for every path that ends
 * one (`transitionTx`, and the batch settle's `planSettle`): not when nothing of it was observed
 * (`nothingRan`), not when its executor attested it (`attested`: stored as signed), and never for a kind
 * only a runner's attestation may record.
 */
export function sealsOwnInterval(
  kind: string,
  extras: Pick<TransitionExtras, 'nothingRan' | 'attested'>,
): boolean {
  return extras.nothingRan !== true && extras.attested === undefined && !RUNNER_ATTESTED_KINDS.has(kind);
}

/** The account an ended interval carries: only what was observed. */
export function observedAccount(kind: string, reported: Account | undefined): Account | undefined {
  // The kinds the control plane executes itself (inline): their intervals' accounts are observed, and empty.
  return reported ?? (INLINE_LANE_KINDS.has(kind) ? NO_CALLS : undefined);
}

const DEFAULT_METER = { watts: 5, meter: 'inline-wallclock-model' };

/**
 * run-model's refusal as the app's, by whose fault it is. A state the event does not fit
 * (`already_terminal`, `illegal_transition`) is 409 `conflict`. `invalid_input` names the culprit in its
 * details: a malformed event (`issues`: e.g. a fail whose error is malformed) is the caller's input → the
 * schema refusal every 400 with issues is (`validationRefusal`: `validation_failed`); `now` before the run's last update (`updatedAt`) is this replica's clock behind the one
 * that wrote the run — not the caller's fault, and no defect either: 409 `conflict`, `reason:
 * clock_behind`, retryable once the clock passes `updatedAt`; a `now` that is no timestamp is a defect of
 * ours → `internal` (500, logged). Every refusal leaves the run as it was.
 */
export function transitionRefusal(error: RunModelError): ControlPlaneError {
  const details = { ...error.details, reason: error.code };
  if (error.code !== 'invalid_input') return new ControlPlaneError('conflict', error.message, details);
  const malformed = runModelValidationRefusal(error);
  if (malformed !== undefined) return malformed;
  if ('updatedAt' in error.details)
    return new ControlPlaneError('conflict', error.message, { ...details, reason: 'clock_behind' });
  return new ControlPlaneError('internal', error.message, details);
}

/** Apply one status-machine event to a run (locks the row). Throws 404 / 400 / 409 (transitionRefusal). */
export async function transitionTx(
  tx: Tx,
  deps: Deps,
  tenant: string,
  runId: string,
  event: RunEvent,
  extras: TransitionExtras = {},
): Promise<{ row: RunRow; from: string }> {
  if (extras.usage) asControlPlaneError(() => ReportedUsage.parse(extras.usage), { at: ['usage'] });
  const locked =
    extras.locked?.id === runId && extras.locked.tenant_id === tenant ? extras.locked : undefined;
  const row = locked ?? (await lockRun(tx, tenant, runId));
  if (!row) throw notFound('run', runId);
  const at = nowIso(deps);
  const result = transition(rowToRun(row), event, at);
  if (!result.ok) throw transitionRefusal(result.error);
  const { run, patch, facts } = result;
  const from = row.status;
  const outputs = extras.outputs ? { ...run.outputs, ...extras.outputs } : run.outputs;
  const usage = extras.usage ? { ...run.usage, ...extras.usage } : run.usage;

  // The record: an interval ends whenever a running run stops running.
  const ops: Operation[] = [];
  let attestationRow: Insertable<AttestationsTable> | null = null;
  const nowMs = Date.parse(at);
  const endsInterval = from === 'running' && patch.status !== 'running' && extras.nothingRan !== true;
  if (endsInterval) {
    const outcome =
      event.type === 'await_input'
        ? 'yielded'
        : event.type === 'succeed'
          ? 'succeeded'
          : event.type === 'fail'
            ? 'failed'
            : 'cancelled';
    const startedMs = row.interval_started_at !== null ? numeric(row.interval_started_at) : nowMs;
    const endedMs =
      extras.intervalEndMs === undefined || !Number.isFinite(extras.intervalEndMs)
        ? nowMs
        : Math.max(startedMs, Math.min(nowMs, Math.floor(extras.intervalEndMs)));
    const meter = { ...DEFAULT_METER, ...extras.interval };
    if (extras.attested) {
      const a = extras.attested;
      // Inserted below, in the statement that appends the segments and updates the run.
      attestationRow = {
        address: a.address,
        tenant_id: row.tenant_id,
        run_id: row.id,
        body: json(encodeAttestationBody(a.body)),
        created_at: at,
      };
      ops.push({
        op: 'execute',
        attestation: a.address,
        body: a.body,
        ...(a.account ? { account: a.account } : {}),
      });
    } else if (sealsOwnInterval(row.kind, extras))
      ops.push(
        await sealInterval(
          tx,
          row,
          {
            startedMs,
            endedMs,
            watts: meter.watts,
            meter: meter.meter,
            outcome,
            exitCode: extras.interval?.exitCode ?? (outcome === 'failed' ? 1 : 0),
            journal: extras.interval?.journal ?? { outputs, facts },
            intervalHead: row.interval_head ?? row.record_head,
            account: observedAccount(row.kind, extras.account),
          },
          at,
          deps.signer,
        ),
      );
  }
  if (event.type === 'await_input') {
    // A park holds exactly the snapshot the executor handed over; with none, there is nothing to park.
    if (!extras.transcript && !extras.image)
      throw new ControlPlaneError('bad_request', 'a park needs the snapshot it parks (transcript address)', {
        reason: 'snapshot_required',
      });
    ops.push({
      op: 'suspend',
      snapshot: extras.image ? { root: extras.image.root } : { transcript: extras.transcript as string },
      manifest: extras.manifest ?? runManifest(run),
    });
  }
  // The record as the caller read it under the same row lock; a resume naming no manifest reads it here (once:
  // the append below uses the same segments).
  let segments = locked && extras.segments ? extras.segments : undefined;
  if (event.type === 'resume_input' && row.record_length > 0) {
    // The OFFERED snapshot and the resuming environment's manifest: runrecord refuses a mismatch
    // (SnapshotMismatch / ManifestMismatch → 409 snapshot_mismatch / manifest_mismatch, nothing written).
    if (!extras.transcript && !extras.image)
      throw new ControlPlaneError(
        'bad_request',
        'a resume offers the snapshot it resumes (transcript address)',
        {
          reason: 'snapshot_required',
        },
      );
    let manifest = extras.manifest;
    if (!manifest) {
      segments ??= await segmentsOf(tx, row.id);
      manifest = resumeManifest(run, segments);
    }
    const parkedMs = Math.max(1, nowMs - Number(row.updated_at));
    // A transcript park draws storage power: ~0.5 mW for the bytes kept (estimated, never zero).
    ops.push({
      op: 'resume',
      snapshot: extras.image ? { root: extras.image.root } : { transcript: extras.transcript as string },
      manifest,
      idleUj: extras.image?.idleUj ?? extras.idleUj ?? BigInt(Math.max(1, Math.round(parkedMs * 0.5))),
      idleProvenance: 'estimated',
    });
  }
  if (isTerminal(patch.status)) {
    ops.push({
      op: 'close',
      reason:
        extras.closeReason ??
        (patch.status === 'succeeded' ? 'completed' : patch.status === 'failed' ? 'failed' : 'cancelled'),
    });
  }
  const startsInterval = patch.status === 'running';
  const runSet = (rec: { head: string; length: number }): RunSet => ({
    status: patch.status,
    updated_at: Date.parse(patch.updatedAt),
    ...(patch.settledAt ? { ended_at: patch.settledAt } : {}),
    ...(patch.error ? { error: json(patch.error) } : {}),
    outputs: json(outputs),
    usage: json(usage),
    record_head: rec.head,
    record_length: rec.length,
    interval_started_at: startsInterval ? nowMs : null,
    interval_head: startsInterval ? rec.head : null,
  });
  let updated: Selectable<RunsTable>;
  if (attestationRow && extras.deferAttested) {
    // Collected: the caller writes it with the others (see `deferAttested`); answered: the row before.
    const rec = await plannedSegments(tx, row, ops, at, segments);
    extras.deferAttested.add(attestationRow, rec.rows, row.id, runSet(rec));
    const { causal_depth: _d, started_ms: _s, ...before } = row;
    updated = before;
  } else if (attestationRow) {
    // An attested interval: its body, its segments and the run's new state in ONE statement (the record's
    // append is checked in memory first — runrecord refuses an illegal one before anything is written).
    const rec = await plannedSegments(tx, row, ops, at, segments);
    const body = attestationRow;
    updated = await tx
      .with('att', (db) =>
        db
          .insertInto('attestations')
          .values(body)
          .onConflict((oc) => oc.column('address').doNothing()),
      )
      .with('seg', (db) => db.insertInto('record_segments').values(rec.rows))
      .updateTable('runs')
      .set(runSet(rec))
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  } else {
    const rec = await appendSegments(tx, row, ops, at, {
      updateRun: false,
      ...(segments ? { segments } : {}),
    });
    updated = await tx
      .updateTable('runs')
      .set(runSet(rec))
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  let startedMs = row.started_ms;
  if (isTerminal(patch.status)) {
    const u = usage as Parameters<typeof totalTokens>[0];
    // The slot's settle: one statement (the run is locked; a slot already terminal is skipped under its
    // lock — the admission store's settle rule, whose refusal nobody here reads), or the caller's, batched.
    const settle: SlotSettlement = {
      tenant,
      runId,
      status: patch.status,
      usd: u.costUsd ?? 0,
      tokens: totalTokens(u) || 0,
    };
    if (extras.deferSettles) extras.deferSettles.push(settle);
    else await settleSlots(tx, [settle]);
  } else if (event.type === 'start' && from === 'queued') {
    await new PgAdmissionLanes(tx).startNow(tenant, runId, nowMs); // no-op when the dispatch claim did it
    // The start is the slot's (its one owner): read back what admission holds.
    const slot = await tx
      .selectFrom('adm_slots')
      .select('started_at')
      .where('tenant', '=', tenant)
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    startedMs = slot.started_at;
  }
  // A running run cancelled: wake every replica's dispatch loop, so the one executing it aborts it.
  const wakeDispatch = from === 'running' && event.type === 'cancel';
  if (extras.deferEvents && !wakeDispatch) extras.deferEvents.push(...factsToEvents(facts));
  else await appendEvents(tx, factsToEvents(facts), wakeDispatch ? DISPATCH_CHANNEL : undefined);
  return {
    row: withSlot(updated, {
      depth: row.causal_depth,
      startedMs: startedMs === null ? null : numeric(startedMs),
    }),
    from,
  };
}
