// A runner's completion of the interval it holds a lease for: the signed `sandbox.attestation/1`, checked
// against the runner's registered key, the run's unit/grants/interval head and the events stored for this
// epoch (intervals.ts appended them), then appended as the `executed` segment and the run settled, in one
// transaction — one completion, or a whole batch of them.
import type { RunEvent } from '@everdict/run-model';
import type { AttestationBody, Hex } from '@everdict/runrecord';
import { canonicalLine, StreamingDigest } from '@everdict/trajectory-store';
import { sql } from 'kysely';
import type { SlotSettlement } from '../admission-store/sql/settle.js';
import type { Tx } from '../db/tx.js';
import { isRetryable, withTx } from '../db/tx.js';
import {
  checkSignedInterval,
  decodeAttestation,
  attestationMismatch as mismatch,
} from '../keys/attestation-check.js';
import { staleLease } from '../leases/store.js';
import type { NewEvent } from '../ledger/events.js';
import { type RunRow, rowToView } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { RunnerAuditLinks } from '../log/audit-chain.js';
import { AttestedWrites } from '../services/attested-writes.js';
import { type Deps, nowIso } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import { mapStoreErrors } from '../trajectory/errors.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { checkArtifactClaims } from './artifact-claims.js';
import {
  finishBatch,
  holdRunner,
  journalOf,
  leaseJournal,
  lockRunById,
  type Prefetched,
  prefetchBatch,
  releaseLeases,
} from './completion-rows.js';
import { noStore, parse } from './intervals.js';
import { type RunnerIdentity, runnerMaySee } from './registry.js';
import { CompleteInput } from './schemas.js';

/** The events an interval appended to the run's trajectory (its journal), in order, read back page by page. */
async function journalRootFromTrajectory(
  trajectories: RunTrajectories,
  tenant: string,
  runId: string,
  journal: { from: number; count: number },
): Promise<string> {
  // Reused (StreamingDigest.take): making a WebAssembly instance per completion cost wall time inside the
  // batch's transaction, with the runner's audit lock held after the first item. A root that threw drops it.
  const digest = await StreamingDigest.take();
  const { from, count } = journal;
  // Offsets are seqs: a runner kind's trajectory is written by its runners only, attempt after attempt.
  for (let at = from; at < from + count; ) {
    const page = await mapStoreErrors(() =>
      trajectories.store.read(tenant, runId, { offset: at, limit: Math.min(1000, from + count - at) }),
    );
    if (page.items.length === 0) break;
    for (const e of page.items) {
      if (e.seq !== at) throw mismatch("the run's trajectory is not the journal this epoch appended", { at });
      digest.update(canonicalLine(e));
      at += 1;
    }
  }
  const root = digest.digest().slice('blake3:'.length);
  digest.release();
  return root;
}

/** A completion as it arrived, decoded: its attestation body and that body's address. */
interface Completion {
  readonly runId: string;
  readonly input: ReturnType<typeof CompleteInput.parse>;
  readonly body: AttestationBody;
  readonly address: Hex;
}

/** `parsed`: `raw` is CompleteInput's output already (CompletionsInput parsed each item with it): not parsed again. */
function decodeCompletion(runId: string, raw: unknown, parsed = false): Completion {
  const input = parsed ? (raw as Completion['input']) : parse(CompleteInput, raw);
  return { runId, input, ...decodeAttestation(input.attestation) };
}

/**
 * Settle a run from its runner's signed interval. Refused with nothing written: 409 `stale_lease` (not the
 * runner's current lease), 409 `attestation_mismatch` (unsigned, another key, not bound to this run's unit,
 * grants or interval head, or a journal root other than the events this epoch appended to the trajectory). Idempotent: the
 * same epoch and attestation again answers the settled run.
 */
export async function completeRun(
  deps: Deps,
  trajectories: RunTrajectories | null,
  runner: RunnerIdentity,
  runId: string,
  raw: unknown,
): Promise<RunView> {
  const c = decodeCompletion(runId, raw);
  return withTx(deps.db, async (tx) => {
    // The runner's row first: a revoke of it waits for this completion, or this completion for the revoke.
    await holdRunner(tx, runner.id);
    const links = new RunnerAuditLinks(tx, runner);
    const run = await settleCompletion(tx, deps, trajectories, runner, links, c);
    await links.save();
    await releaseLeases(tx, [{ runId, epoch: c.input.epoch }]);
    return rowToView(run);
  });
}

/** What `completeRuns` answers per item: settled (the run), refused (the error) or skipped. */
export type CompletionOutcome =
  | { runId: string; run: RunView }
  | { runId: string; error: unknown }
  | { runId: string; skipped: true };

/** An item's refusal, thrown out of the batch's transaction to roll it back. */
class Refusal {
  constructor(
    readonly index: number,
    readonly error: unknown,
  ) {}
}

/**
 * Several completions of one runner, in its audit chain's order, settled in ONE transaction (one commit,
 * the runner's audit lock taken once) — each checked exactly as `completeRun` checks one. The first refusal
 * ends the batch: the transaction is rolled back, the items before the refused one are settled again on
 * their own in a new one (so a refusal never undoes an item the answer reports settled), and the items after
 * it are `skipped`, untouched. A failure that is not an item's refusal (the database) is reported as the
 * refusal of the first item not yet settled, nothing of the batch written.
 */
export async function completeRuns(
  deps: Deps,
  trajectories: RunTrajectories | null,
  runner: RunnerIdentity,
  items: readonly { runId: string; raw: unknown }[],
  /** The items' `raw` are CompleteInput's outputs already (the service parsed them with CompletionsInput). */
  opts: { parsed?: boolean } = {},
): Promise<CompletionOutcome[]> {
  const decoded: Completion[] = [];
  let refused: { index: number; error: unknown } | null = null;
  for (const [index, { runId, raw }] of items.entries()) {
    try {
      decoded.push(decodeCompletion(runId, raw, opts.parsed === true));
    } catch (error) {
      refused = { index, error };
      break;
    }
  }
  let settled: RunView[] = [];
  // Shrinks to the refused item's index after each refusal: the prefix before it is settled on its own.
  let limit = decoded.length;
  while (limit > 0) {
    const n = limit;
    try {
      settled = await withTx(deps.db, async (tx) => {
        // The runner's audit chain: locked and read once for the batch, its links kept in one insert.
        const links = new RunnerAuditLinks(tx, runner);
        // The runs, leases and records read once for the batch; the runs' events inserted once, in order.
        // With them the runner key's audit lock and last link (the links are primed: no statement of their own).
        // First of all the runner's row (FOR KEY SHARE): a revoke of it waits for this batch, or this batch for it.
        const pre = await prefetchBatch(tx, decoded.slice(0, n), {
          runnerId: runner.id,
          key: runner.publicKey,
          links,
        });
        const events: NewEvent[] = [];
        const settles: SlotSettlement[] = [];
        // The attested writes of a batch of distinct runs, made in ONE statement after every check (a run
        // named twice must see its first item's write: such a batch writes each item as it goes).
        const distinct = new Set(decoded.slice(0, n).map((c) => c.runId)).size === n;
        const writes = distinct ? new AttestedWrites() : undefined;
        const out: RunRow[] = [];
        for (let i = 0; i < n; i++) {
          const c = decoded[i]!;
          const read = pre.get(c.runId);
          pre.delete(c.runId); // a run named again reads afresh
          try {
            out.push(
              await settleCompletion(tx, deps, trajectories, runner, links, c, {
                read,
                events,
                settles,
                writes,
              }),
            );
          } catch (error) {
            if (isRetryable(error)) throw error; // the whole batch is retried (withTx)
            throw new Refusal(i, error);
          }
        }
        // The runs' admission slots, settled in ONE statement (slot rows in order, after every run lock): the
        // batch's write statement when there is one.
        // (Without deferred writes, an empty AttestedWrites' flush is the slot settle alone.)
        const written = await (writes ?? new AttestedWrites()).flush(tx, settles);
        // The events, the audit links and the leases' release: one statement (finishBatch).
        await finishBatch(
          tx,
          events,
          links,
          decoded.slice(0, n).map((c) => ({ runId: c.runId, epoch: c.input.epoch })),
        );
        // A deferred item's row is the one written (with its slot's columns as transitionTx kept them).
        return out.map((row) => {
          const w = written.get(row.id);
          return rowToView(w ? { ...w, causal_depth: row.causal_depth, started_ms: row.started_ms } : row);
        });
      });
      break;
    } catch (e) {
      settled = [];
      if (e instanceof Refusal) {
        refused = { index: e.index, error: e.error };
        limit = e.index;
      } else {
        refused = { index: 0, error: e };
        limit = 0;
      }
    }
  }
  return items.map(({ runId }, i): CompletionOutcome => {
    if (i < settled.length) return { runId, run: settled[i]! };
    if (refused && i === refused.index) return { runId, error: refused.error };
    return { runId, skipped: true };
  });
}

/** One completion's checks and its settle, in the caller's transaction (see `completeRun`). */
async function settleCompletion(
  tx: Tx,
  deps: Deps,
  trajectories: RunTrajectories | null,
  runner: RunnerIdentity,
  links: RunnerAuditLinks,
  { runId, input, body, address }: Completion,
  batch: {
    read?: Prefetched | undefined;
    events?: NewEvent[];
    settles?: SlotSettlement[];
    writes?: AttestedWrites | undefined;
  } = {},
): Promise<RunRow> {
  const { read, events, settles, writes } = batch;
  // Lock order of the lease rule: the run row (by id: ids are unique across tenants), then its lease.
  const row = read ? read.row : await lockRunById(tx, runId);
  // Another tenant's run is, to a tenant-scoped runner, as a run that does not exist (nothing of it answered).
  if (!row || !runnerMaySee(runner, row.tenant_id)) throw staleLease(runId, input.epoch, null);
  // A repeat of a completion that already settled this run with this very attestation, by this runner: the
  // stored attestation's signature, not only its address (which does not cover the signature), is the one
  // presented — a copy of another runner's attestation re-signed (or just re-labelled) with this runner's
  // key is not a repeat.
  const sig = body.signature;
  if (row.status !== 'running' && row.attempt === input.epoch && sig?.key === runner.publicKey) {
    const done = await tx
      .selectFrom('attestations')
      .select('address')
      .where('run_id', '=', runId)
      .where('address', '=', address)
      .where(sql<string>`body->'signature'->>'key'`, '=', sig.key)
      .where(sql<string>`body->'signature'->>'sig'`, '=', sig.sig)
      .executeTakeFirst();
    if (done) return row;
  }
  const journal = read
    ? journalOf(read.lease, runner, runId, input.epoch)
    : await leaseJournal(tx, runner, runId, input.epoch);
  if (row.status !== 'running') throw staleLease(runId, input.epoch, row.attempt);
  checkSignedInterval(body, address, runner.publicKey, row, { host: 'runner', unit: 'run', span: 'lease' });
  if (!trajectories) throw noStore();
  const root = await journalRootFromTrajectory(trajectories, row.tenant_id, runId, journal);
  if (body.journalRoot !== root)
    throw mismatch('journal_root is not the digest of the events stored for this epoch', {
      expected: root,
    });
  // Its outputs' artifacts are the ones stored under this lease (artifact-claims.ts).
  await checkArtifactClaims(tx, runId, input.epoch, input.outputs.artifacts ?? []);
  const event: RunEvent =
    body.outcome === 'succeeded'
      ? { type: 'succeed' }
      : body.outcome === 'failed'
        ? {
            type: 'fail',
            error: {
              code: 'exit_code',
              // exit 0 and failed: a limit stopped it, its harness reported a failure, or its out/ could not be read
              message:
                body.exitCode === 0
                  ? 'exited with 0, failed on its outputs (a limit, its harness, or an unreadable out/: see the summary)'
                  : `exited with ${body.exitCode}`,
              retryable: false,
            },
          }
        : (() => {
            throw mismatch(`a runner's interval ends succeeded or failed, not ${body.outcome}`);
          })();
  // The runner key's audit chain (log/audit-chain.ts): audit_prev must be its previous attestation.
  await links.link(body, address, { tenantId: row.tenant_id, runId, now: nowIso(deps) });
  const { artifacts, ...rest } = input.outputs;
  const outputs = {
    exitCode: body.exitCode,
    ...rest,
    ...(artifacts ? { artifacts } : {}),
  };
  const { row: settled } = await transitionTx(tx, deps, row.tenant_id, runId, event, {
    outputs,
    ...(input.usage ? { usage: input.usage } : {}),
    attested: { address, body, ...(input.account ? { account: input.account } : {}) },
    locked: row,
    ...(read ? { segments: read.segments } : {}),
    ...(events ? { deferEvents: events } : {}),
    ...(settles ? { deferSettles: settles } : {}),
    ...(writes ? { deferAttested: writes } : {}),
  });
  return settled;
}
