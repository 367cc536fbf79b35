// A paired agent host's interval attestation: the `sandbox.attestation/1` body the host built and signed for
// the interval its report ends (awaiting_input → `yielded`, succeeded, failed), checked here before the
// `executed` segment is appended with it — the host's registered key, the run's unit and grant set, the
// record head at the interval's start, the outcome the report names, and the journal root: the address of
// the transcript as STORED (BLAKE3 over canonical JSONL, the trajectory store's digest), which is also the
// address a park names. Any mismatch is 409 `attestation_mismatch` and nothing is written (the caller's
// transaction rolls back).
import type { AttestationBody, Hex } from '@everdict/runrecord';
import { canonicalLine, StreamingDigest } from '@everdict/trajectory-store';
import {
  checkSignedInterval,
  decodeAttestation,
  attestationMismatch as mismatch,
} from '../keys/attestation-check.js';
import type { RunRow } from '../ledger/runs.js';
import { mapStoreErrors } from '../trajectory/errors.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import type { AgentHost } from './hosts.js';

/** The outcome an interval's attestation must state for the report that ends it. */
const OUTCOME: Record<string, AttestationBody['outcome']> = {
  awaiting_input: 'yielded',
  suspended: 'yielded',
  succeeded: 'succeeded',
  failed: 'failed',
};

/** The stored transcript's address (64 hex): BLAKE3 over its canonical JSONL, read back page by page. */
export async function storedTranscriptAddress(
  trajectories: RunTrajectories,
  tenant: string,
  runId: string,
): Promise<Hex> {
  const digest = await StreamingDigest.create();
  for (let at = 0; ; ) {
    const page = await mapStoreErrors(() =>
      trajectories.store.read(tenant, runId, { offset: at, limit: 1000 }),
    );
    if (page.items.length === 0) break;
    for (const e of page.items) digest.update(canonicalLine(e));
    at += page.items.length;
  }
  return digest.digest().slice('blake3:'.length) as Hex;
}

/** A refusal unless `raw` is an interval attestation of `host` for this run's interval, ending as `event`. */
export async function checkHostAttestation(
  run: RunRow,
  host: AgentHost,
  event: string,
  raw: unknown,
  trajectories: RunTrajectories | null,
): Promise<{ address: Hex; body: AttestationBody }> {
  if (raw === undefined)
    throw mismatch(`${host.id} is a paired agent host: the interval it ends carries its signed attestation`, {
      reason: 'attestation_required',
    });
  const { body, address } = decodeAttestation(raw);
  if (host.state !== 'active') throw mismatch(`agent host ${host.id} is revoked`);
  if (host.tenantId !== null && host.tenantId !== run.tenant_id)
    throw mismatch(`agent host ${host.id} is another tenant's`);
  checkSignedInterval(body, address, host.publicKey, run, {
    host: 'agent host',
    unit: 'turn',
    span: 'interval',
  });
  const outcome = OUTCOME[event];
  if (body.outcome !== outcome)
    throw mismatch(`a ${event} report ends its interval ${outcome}, not ${body.outcome}`);
  if (body.auditPrev !== undefined) throw mismatch('an agent host keeps no audit chain (audit_prev)');
  if (trajectories) {
    const stored = await storedTranscriptAddress(trajectories, run.tenant_id, run.id);
    if (body.journalRoot !== stored)
      throw mismatch('journal_root is not the address of the transcript as stored', { expected: stored });
  }
  return { address, body };
}
