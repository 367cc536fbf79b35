// What a runner reports about the interval it holds a lease for: its events (stored per epoch: the journal
// its attestation commits to), its artifacts, and its completion — the signed `sandbox.attestation/1`,
// checked against the runner's registered key, the run's unit/grants/interval head and the events stored
// for this epoch, then appended as the `executed` segment and the run settled, in one transaction.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RunEvent } from '@everdict/run-model';
import {
  type AttestationBody,
  attestationAddress,
  blake3,
  bytesToHex,
  decodeAttestationBody,
  verifyAddressSignature,
} from '@everdict/runrecord';
import { canonicalJsonl } from '@everdict/trajectory-store';
import { sql } from 'kysely';
import { json } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError } from '../errors.js';
import { release, staleLease } from '../leases/store.js';
import { lockRun, rowToView } from '../ledger/runs.js';
import { linkRunnerAudit } from '../log/audit-chain.js';
import { type Deps, nowIso } from '../services/context.js';
import { transitionTx } from '../services/lifecycle.js';
import type { RunView } from '../services/types.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { assertRunnerLease } from './leases.js';
import type { RunnerIdentity } from './registry.js';
import { ArtifactQuery, CompleteInput, EventsInput } from './schemas.js';

const parse = <T>(
  s: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: unknown } },
  v: unknown,
): T => {
  const r = s.safeParse(v);
  if (!r.success) throw r.error;
  return r.data;
};

/** The events a runner stored for (run, epoch), in order. */
async function epochEvents(ex: Executor, runId: string, epoch: number): Promise<unknown[]> {
  const rows = await ex
    .selectFrom('runner_events')
    .select('event')
    .where('run_id', '=', runId)
    .where('epoch', '=', epoch)
    .orderBy('seq')
    .execute();
  return rows.map((r) => r.event);
}

/** An interval's journal root: BLAKE3 of the canonical JSONL of the events it appended (64 hex). */
export function journalRootOf(events: readonly unknown[]): string {
  return bytesToHex(blake3(new TextEncoder().encode(canonicalJsonl(events))));
}

/** Append events under the runner's current lease (else 409 `stale_lease`). Answers the epoch's count. */
export async function appendRunnerEvents(
  deps: Deps,
  runner: RunnerIdentity,
  runId: string,
  raw: unknown,
  trajectories: RunTrajectories | null = null,
): Promise<{ eventCount: number }> {
  const input = parse(EventsInput, raw);
  const foreign = input.events.find((e) => e.runId !== runId);
  if (foreign)
    throw new ControlPlaneError('bad_request', `an event of run ${foreign.runId} reported for run ${runId}`);
  const stored = await withTx(deps.db, async (tx) => {
    await assertRunnerLease(tx, runner, runId, input.epoch);
    const last = await tx
      .selectFrom('runner_events')
      .select(sql<number>`COALESCE(max(seq), -1)::int`.as('seq'))
      .where('run_id', '=', runId)
      .where('epoch', '=', input.epoch)
      .executeTakeFirstOrThrow();
    const from = Number(last.seq) + 1;
    if (input.events.length > 0) {
      await tx
        .insertInto('runner_events')
        .values(
          input.events.map((e, i) => ({ run_id: runId, epoch: input.epoch, seq: from + i, event: json(e) })),
        )
        .execute();
    }
    return { eventCount: from + input.events.length };
  });
  // The run's trajectory (the store the UI and graders read), after the journal the attestation commits to
  // is stored: a store refusal (e.g. a retried attempt re-using seq numbers) is logged, never lost evidence.
  if (trajectories && input.events.length > 0) {
    const owner = await deps.db
      .selectFrom('runs')
      .select('tenant_id')
      .where('id', '=', runId)
      .executeTakeFirst();
    if (owner)
      await trajectories
        .appendTrusted(owner.tenant_id, runId, input.events)
        .catch((e: unknown) =>
          deps.log('warn', 'runner events not appended to the trajectory', { runId, error: String(e) }),
        );
  }
  return { eventCount: stored.eventCount };
}

/**
 * Store one artifact under the runner's current lease, streamed (never held whole): written to a temporary
 * file while hashed, then renamed to its content address `sha256:<hex>` (file `dir/sha256-<hex>`).
 */
export async function putArtifact(
  deps: Deps,
  dir: string,
  runner: RunnerIdentity,
  runId: string,
  query: unknown,
  body: ReadableStream<Uint8Array> | null,
): Promise<{ path: string; address: string; size: number }> {
  const q = parse(ArtifactQuery, query);
  await withTx(deps.db, (tx) => assertRunnerLease(tx, runner, runId, q.epoch));
  await mkdir(dir, { recursive: true });
  const tmp = path.join(dir, `.tmp-${deps.ids('art')}`);
  const hash = createHash('sha256');
  let size = 0;
  const source = body ? Readable.fromWeb(body as Parameters<typeof Readable.fromWeb>[0]) : Readable.from([]);
  source.on('data', (chunk: Buffer) => {
    hash.update(chunk);
    size += chunk.length;
  });
  try {
    await pipeline(source, createWriteStream(tmp, { mode: 0o600 }));
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  const address = `sha256:${hash.digest('hex')}`;
  await rename(tmp, path.join(dir, address.replace(':', '-')));
  await withTx(deps.db, async (tx) => {
    await assertRunnerLease(tx, runner, runId, q.epoch);
    await tx
      .insertInto('runner_artifacts')
      .values({ run_id: runId, epoch: q.epoch, path: q.path, address, size })
      .onConflict((oc) => oc.columns(['run_id', 'epoch', 'path']).doUpdateSet({ address, size }))
      .execute();
  });
  return { path: q.path, address, size };
}

const mismatch = (message: string, details: Record<string, unknown> = {}) =>
  new ControlPlaneError('attestation_mismatch', message, details);

/**
 * Settle a run from its runner's signed interval. Refused with nothing written: 409 `stale_lease` (not the
 * runner's current lease), 409 `attestation_mismatch` (unsigned, another key, not bound to this run's unit,
 * grants or interval head, or a journal root other than the events stored for this epoch). Idempotent: the
 * same epoch and attestation again answers the settled run.
 */
export async function completeRun(
  deps: Deps,
  runner: RunnerIdentity,
  runId: string,
  raw: unknown,
): Promise<RunView> {
  const input = parse(CompleteInput, raw);
  let body: AttestationBody;
  try {
    body = decodeAttestationBody(input.attestation);
  } catch (e) {
    throw mismatch(`the attestation is not a sandbox.attestation/1 body: ${(e as Error).message}`);
  }
  const address = attestationAddress(body);
  return withTx(deps.db, async (tx) => {
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
    const sig = body.signature;
    if (!sig) throw mismatch('the attestation is not signed');
    if (sig.key !== runner.publicKey)
      throw mismatch('the attestation is signed by another key than this runner registered', {
        key: sig.key,
      });
    if (!verifyAddressSignature(address, sig)) throw mismatch('the signature does not verify');
    if (body.unitId !== row.unit_id || body.grantsId !== row.grants_id)
      throw mismatch('the attestation names another unit or grant set than this run');
    const head = row.interval_head ?? row.record_head;
    if (body.recordHead !== head)
      throw mismatch('the attestation is not bound to the record head at the start of this lease', {
        expected: head,
      });
    const root = journalRootOf(await epochEvents(tx, runId, input.epoch));
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
  });
}
