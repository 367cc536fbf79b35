// The agent service reports a leased turn's transitions (POST /internal/agent-run-events WITH `epoch` and
// `holder`). The control plane owns the record: every report is one status-machine event saved with its
// segments (runrecord checks each append) in one transaction, after the lease check:
//   resumed         awaiting_input → running; `resumed` segment: the OFFERED transcript address and the
//                   resuming process's manifest (SnapshotMismatch / ManifestMismatch → 409, nothing written)
//                   and the park's idle energy (stored bytes × parked s × EVERDICT_STORAGE_W_PER_GB,
//                   estimated, ≥ 1 µJ); the same figure with its inputs is appended to the transcript as an
//                   `everdict/park` extension event — the label travels with the evidence.
//   awaiting_input  running → awaiting_input; `executed` (the interval's account: dispatched / resolved
//                   call ids) + `suspended` (snapshot {transcript: digest}, manifest); the lease is released.
//   succeeded/failed `executed` (+ account) + `closed`; the lease is released.
// Who signs an `executed` segment: when the lease holder is a paired agent host (agents/hosts.ts), the
// attestation its report carries, checked against the host's registered key, unit/grants, the interval's
// start head, the outcome and the stored transcript (agents/attestation.ts) — a bad one is 409
// `attestation_mismatch`, nothing written; when the holder is not paired (an embedded or legacy agent
// service), the control plane seals the interval with its own key, as `signedBy` then says — and an
// attestation from such a holder is refused (its key is unknown).
import { blake3, bytesToHex } from '@everdict/runrecord';
import { numeric } from '../db/numeric.js';
import { withTx } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { release } from '../leases/store.js';
import { lockRun, rowToView } from '../ledger/runs.js';
import type { RunView } from '../ledger/views.js';
import { asControlPlaneError } from '../services/boundary.js';
import type { Deps } from '../services/context.js';
import { type TransitionExtras, transitionTx } from '../services/lifecycle.js';
import { AgentRunEventInput, type Principal } from '../services/types.js';
import type { RunTrajectories } from '../trajectory/run-trajectories.js';
import { checkHostAttestation } from './attestation.js';
import { type ParkEnergy, parkEnergy } from './energy.js';
import type { HolderPolicy } from './hosts.js';
import { assertTurnLease } from './leases.js';

export const AGENT_METER = { meter: 'agent-wallclock-model', watts: 2 };

export function turnReports(
  deps: Deps,
  trajectories: RunTrajectories | null,
  wattsPerGb: number,
  holders: HolderPolicy,
) {
  return {
    async report(p: Principal, raw: unknown): Promise<RunView> {
      const input = asControlPlaneError(() => AgentRunEventInput.parse(raw));
      const { runId, epoch, holder } = input;
      if (!runId || epoch === undefined || !holder)
        throw new ControlPlaneError('bad_request', 'a leased report names runId, epoch and holder');
      let park: ParkEnergy | null = null;
      const row = await asControlPlaneError(() =>
        withTx(deps.db, async (tx) => {
          const run = await lockRun(tx, p.tenantId, runId);
          if (!run) throw notFound('run', runId);
          if (run.kind !== 'agent')
            throw new ControlPlaneError('conflict', `run ${runId} is a ${run.kind} run, not an agent turn`, {
              reason: 'not_an_agent_run',
            });
          const host = await assertTurnLease(tx, runId, epoch, holder, holders);
          const ends = input.event !== 'resumed';
          if (input.attestation !== undefined && (!host || !ends))
            throw new ControlPlaneError(
              'attestation_mismatch',
              host
                ? 'a resumed report ends no interval: it carries no attestation'
                : `the lease holder ${holder} is no paired agent host: the attestation's key is unknown`,
              { reason: host ? 'no_interval' : 'unknown_host' },
            );
          const attested =
            host && ends
              ? await checkHostAttestation(run, host, input.event, input.attestation, trajectories)
              : null;
          const extras: TransitionExtras = {
            ...(input.outputs ? { outputs: { ...input.outputs } } : {}),
            ...(input.usage ? { usage: { ...input.usage } } : {}),
            ...(input.transcript ? { transcript: input.transcript } : {}),
            ...(input.manifest ? { manifest: input.manifest } : {}),
            ...(input.account ? { account: input.account } : {}),
            interval: { ...AGENT_METER },
            ...(attested
              ? { attested: { ...attested, ...(input.account ? { account: input.account } : {}) } }
              : {}),
          };
          const nowMs = deps.clock().getTime();
          switch (input.event) {
            case 'resumed': {
              const turn = await tx
                .selectFrom('agent_turns')
                .select(['parked_at_ms', 'transcript_bytes'])
                .where('run_id', '=', runId)
                .executeTakeFirst();
              if (turn?.parked_at_ms == null || turn.transcript_bytes == null)
                throw new ControlPlaneError('conflict', `turn ${runId} holds no transcript park`, {
                  reason: 'not_parked',
                });
              park = parkEnergy(
                numeric(turn.transcript_bytes),
                nowMs - numeric(turn.parked_at_ms),
                wattsPerGb,
              );
              return (
                await transitionTx(
                  tx,
                  deps,
                  p.tenantId,
                  runId,
                  { type: 'resume_input' },
                  {
                    ...extras,
                    idleUj: park.idleUj,
                  },
                )
              ).row;
            }
            case 'awaiting_input':
            case 'suspended': {
              if (input.transcriptBytes === undefined)
                throw new ControlPlaneError('bad_request', 'a transcript park states its stored bytes', {
                  reason: 'transcript_bytes_required',
                });
              const out = await transitionTx(
                tx,
                deps,
                p.tenantId,
                runId,
                { type: 'await_input', reason: input.event },
                extras,
              );
              const subject = run.subject as { agentId?: string; agentVersion?: string };
              await tx
                .insertInto('agent_turns')
                .values({
                  run_id: runId,
                  tenant_id: p.tenantId,
                  agent_id: subject.agentId ?? '',
                  agent_version: Number(subject.agentVersion) || 0,
                  input_text: null,
                  parked_at_ms: nowMs,
                  transcript_bytes: input.transcriptBytes,
                  created_at: deps.clock(),
                })
                .onConflict((oc) =>
                  oc
                    .column('run_id')
                    .doUpdateSet({ parked_at_ms: nowMs, transcript_bytes: input.transcriptBytes ?? 0 }),
                )
                .execute();
              await release(tx, runId, epoch);
              return out.row;
            }
            case 'succeeded':
            case 'failed': {
              const event =
                input.event === 'succeeded'
                  ? ({ type: 'succeed' } as const)
                  : ({
                      type: 'fail',
                      error: input.error ?? { code: 'agent_failed', message: 'agent reported failure' },
                    } as const);
              const out = await transitionTx(tx, deps, p.tenantId, runId, event, extras);
              await release(tx, runId, epoch);
              return out.row;
            }
            default:
              throw new ControlPlaneError('bad_request', `a leased turn does not report ${input.event}`);
          }
        }),
      );
      const label = park as ParkEnergy | null;
      if (label && trajectories) {
        // The park's figure, labelled, in the transcript itself (after the record holds it).
        const batchKey = bytesToHex(blake3(new TextEncoder().encode(`park:${runId}:${epoch}`))).slice(0, 32);
        await trajectories
          .appendDrafts(
            p.tenantId,
            runId,
            [
              {
                type: 'extension',
                ts: deps.clock().toISOString(),
                ext: 'everdict/park',
                data: {
                  transcript: input.transcript ?? null,
                  bytes: label.bytes,
                  parkedMs: label.parkedMs,
                  wattsPerGb: label.wattsPerGb,
                  idleUj: label.idleUj.toString(),
                  provenance: label.provenance,
                  meter: label.meter,
                },
              },
            ],
            batchKey,
          )
          .catch((e: unknown) =>
            deps.log('warn', 'park label not appended to the transcript', { runId, error: String(e) }),
          );
      }
      return rowToView(row);
    },
  };
}
