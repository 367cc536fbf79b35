// A runner's completion of the interval it holds a lease for: the signed `sandbox.attestation/1`, checked
// against the runner's registered key, the run's unit/grants/interval head and the events stored for this
// epoch (intervals.ts appended them), then appended as the `executed` segment and the run settled, in one
// transaction — one completion, or a whole batch of them.
import type { RunEvent } from '@everdict/run-model';
import type { AttestationBody, Hex } from '@everdict/runrecord';
import { canonicalLine, StreamingDigest } from '@everdict/trajectory-store';
import type { Executor, Tx } from '../db/tx.js';
import { isRetryable, withTx } from '../db/tx.js';
import {
  checkSignedInterval,
  decodeAttestation,
  attestationMismatch as mismatch,
} from '../keys/attestation-check.js';
import { release, staleLease } from '../leases/store.js';
import { lockRun, rowToView } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { linkRunnerAudit } from '../log/audit-chain.js';
import { type Deps, nowIso } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import { mapStoreErrors } from '../trajectory/errors.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { noStore, parse } from './intervals.js';
import { assertRunnerLease } from './leases.js';
import type { RunnerIdentity } from './registry.js';
import { CompleteInput } from './schemas.js';

/** The events an interval appended to the run's trajectory (its journal), in order, read back page by page. */
async function journalRootFromTrajectory(
  ex: Executor,
  trajectories: RunTrajectories,
  tenant: string,
  runId: string,
  epoch: number,
): Promise<string> {
  const j = await ex
    .selectFrom('runner_journals')
    .select(['seq_from', 'event_count'])
    .where('run_id', '=', runId)
    .where('epoch', '=', epoch)
    .executeTakeFirst();
  const digest = await StreamingDigest.create();
  const from = j ? Number(j.seq_from) : 0;
  const count = j ? Number(j.event_count) : 0;
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
  return digest.digest().slice('blake3:'.length);
}

/** An interval's journal root: BLAKE3 of the canonical JSONL of the events it appended (64 hex). */

/** A completion as it arrived, decoded: its attestation body and that body's address. */
interface Completion {
  readonly runId: string;
  readonly input: ReturnType<typeof CompleteInput.parse>;
  readonly body: AttestationBody;
  readonly address: Hex;
}

function decodeCompletion(runId: string, raw: unknown): Completion {
  const input = parse(CompleteInput, raw);
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
  return withTx(deps.db, (tx) => settleCompletion(tx, deps, trajectories, runner, c));
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
): Promise<CompletionOutcome[]> {
  const decoded: Completion[] = [];
  let refused: { index: number; error: unknown } | null = null;
  for (const [index, { runId, raw }] of items.entries()) {
    try {
      decoded.push(decodeCompletion(runId, raw));
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
        const out: RunView[] = [];
        for (let i = 0; i < n; i++) {
          try {
            out.push(await settleCompletion(tx, deps, trajectories, runner, decoded[i]!));
          } catch (error) {
            if (isRetryable(error)) throw error; // the whole batch is retried (withTx)
            throw new Refusal(i, error);
          }
        }
        return out;
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
  { runId, input, body, address }: Completion,
): Promise<RunView> {
  const owner = await tx.selectFrom('runs').select('tenant_id').where('id', '=', runId).executeTakeFirst();
  if (!owner) throw staleLease(runId, input.epoch, null);
  // Lock order of the lease rule: the run row, then its lease.
  const row = await lockRun(tx, owner.tenant_id, runId);
  if (!row) throw staleLease(runId, input.epoch, null);
  // A repeat of a completion that already settled this run with this very attestation, by this runner.
  if (row.status !== 'running' && row.attempt === input.epoch && body.signature?.key === runner.publicKey) {
    const done = await tx
      .selectFrom('attestations')
      .select('address')
      .where('run_id', '=', runId)
      .where('address', '=', address)
      .executeTakeFirst();
    if (done) return rowToView(row);
  }
  await assertRunnerLease(tx, runner, runId, input.epoch);
  if (row.status !== 'running') throw staleLease(runId, input.epoch, row.attempt);
  checkSignedInterval(body, address, runner.publicKey, row, { host: 'runner', unit: 'run', span: 'lease' });
  if (!trajectories) throw noStore();
  const root = await journalRootFromTrajectory(tx, trajectories, row.tenant_id, runId, input.epoch);
  if (body.journalRoot !== root)
    throw mismatch('journal_root is not the digest of the events stored for this epoch', {
      expected: root,
    });
  const event: RunEvent =
    body.outcome === 'succeeded'
      ? { type: 'succeed' }
      : body.outcome === 'failed'
        ? {
            type: 'fail',
            error: { code: 'exit_code', message: `exited with ${body.exitCode}`, retryable: false },
          }
        : (() => {
            throw mismatch(`a runner's interval ends succeeded or failed, not ${body.outcome}`);
          })();
  // The runner key's audit chain (log/audit-chain.ts): audit_prev must be its previous attestation.
  await linkRunnerAudit(tx, runner, body, address, { tenantId: row.tenant_id, runId, now: nowIso(deps) });
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
  });
  await release(tx, runId, input.epoch);
  return rowToView(settled);
}
