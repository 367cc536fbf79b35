// The ControlPlane port: every call the agent service makes to the control plane, in the domain's words.
// Its seat is `HttpControlPlane` (src/http/http-control-plane.ts) over the control plane's agent routes,
// through @everdict/client. The control plane owns the turn's record: the agent reports transitions (with
// its lease's epoch and each interval's account) and the control plane appends the segments. A refusal is
// always an AgentError with its code and status — a 402 from the envelope reaches the model as a tool
// error, never as a pretend result.
import type { JsonValue, TraceEvent } from '@everdict/run-model';
import { z } from 'zod';
import { AgentSpec } from './agent-spec.js';
import type { IntervalSigner } from './host/host-key.js';

/** What a parked call waits for, once it arrives. */
export const Resolution = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('approval'),
    callId: z.string().min(1),
    approved: z.boolean(),
    note: z.string().max(10_000).optional(),
    by: z.string().min(1).optional(),
  }),
  z.object({
    kind: z.literal('run'),
    callId: z.string().min(1),
    runId: z.string().min(1),
    status: z.enum(['succeeded', 'failed', 'cancelled']),
    outputs: z.json().optional(),
  }),
  z.object({
    /** An experiment group: resolved once every run of it has settled (outputs: read_run per run). */
    kind: z.literal('experiment'),
    callId: z.string().min(1),
    groupId: z.string().min(1),
    status: z.enum(['succeeded', 'partial', 'failed', 'cancelled']),
    runs: z.array(
      z.object({ runId: z.string().min(1), status: z.enum(['succeeded', 'failed', 'cancelled']) }),
    ),
  }),
]);
export type Resolution = z.infer<typeof Resolution>;

/** A leased turn: the same lease/heartbeat/epoch rules as a runner's (docs/runner-protocol.md). */
export const TurnLease = z.object({
  runId: z.string().min(1),
  tenant: z.string().min(1),
  epoch: z.int().positive(),
  leaseMs: z.int().positive(),
  heartbeatMs: z.int().positive(),
  unitId: z.string().regex(/^[0-9a-f]{64}$/),
  grantsId: z.string().regex(/^[0-9a-f]{64}$/),
  agent: AgentSpec,
  /** The record so far (wire form, the control plane's), or null for a turn that never ran. */
  record: z.unknown().nullable(),
  /**
   * The record's head now: a running turn's interval starts here; a parked turn's starts at the head its
   * `resumed` report answers. A paired host's attestation is bound to it.
   */
  recordHead: z.string().regex(/^[0-9a-f]{64}$/),
  /** When the turn parked (epoch ms), if it is resuming a park. */
  parkedAtMs: z.int().nonnegative().optional(),
  /** The message (or event) that opened the turn (first interval only). */
  input: z.object({ text: z.string() }).optional(),
  /** Results that arrived for the turn's dispatched calls. */
  resolutions: z.array(Resolution),
});
export type TurnLease = z.infer<typeof TurnLease>;

/** Who holds which turn at which epoch: every call about a turn names it (a stale one is `stale_lease`). */
export interface LeaseRef {
  readonly runId: string;
  readonly tenant: string;
  readonly epoch: number;
  readonly holder: string;
}

/** A transition the agent reports (POST /internal/agent-run-events, with the lease's epoch). */
export interface TurnReport {
  readonly event: 'resumed' | 'awaiting_input' | 'succeeded' | 'failed';
  /** The transcript's address: parked (awaiting_input) or offered (resumed). */
  readonly transcript?: string;
  /** The transcript's canonical bytes at the park (its idle energy's input). */
  readonly transcriptBytes?: number;
  /** This process's manifest (parking, or resuming). */
  readonly manifest?: string;
  /** The interval that ends with this report: the call ids it dispatched and resolved. */
  readonly account?: { dispatched: readonly string[]; resolved: readonly string[] };
  readonly outputs?: { summary?: string };
  readonly usage?: { inputTokens: number; outputTokens: number; costUsd: number; llmCalls: number };
  readonly error?: { code: string; message: string };
  /** A paired host's signed `sandbox.attestation/1` (wire body) of the interval this report ends. */
  readonly attestation?: Record<string, unknown>;
}

/** Why a holder declines a parked turn's resume: what the record refused (the control plane's codes). */
export type DeclineReason = 'manifest_mismatch' | 'snapshot_mismatch';

/** What a decline did: the turn is ready again for the other holders, or none is left and it failed. */
export interface TurnDeclined {
  readonly outcome: 'requeued' | 'failed';
  readonly declinedBy: readonly string[];
}

export interface CommandRunSpec {
  readonly command: readonly string[];
  readonly image?: string;
}

export interface ExperimentSpec {
  /** `id@version` of a registered harness. */
  readonly harness: string;
  readonly dataset?: string;
  /** N runs of one case … */
  readonly repeat?: number;
  /** … or one run per case. */
  readonly cases?: readonly Record<string, JsonValue>[];
}

export type RunView = 'outputs' | 'trajectory';

export interface TranscriptPage {
  readonly events: TraceEvent[];
  readonly nextOffset: number;
  readonly eventCount: number;
}

export interface ControlPlane {
  /** Long-poll for ready turns (new, or a park whose calls are all resolved). */
  lease(request: {
    free: number;
    holder: string;
    waitMs?: number;
    /** Ends the poll early (the service stopping): the request is aborted. */
    signal?: AbortSignal;
    /**
     * What this holder can resume (host/capabilities.ts; default: this build's `hostCapabilities()`): a park
     * it declined under the same set is not offered to it again.
     */
    capabilities?: readonly string[];
    /**
     * The holder's signer when it is a paired host: a granted lease it cannot read is reported `failed`
     * (`bad_lease`) with the interval attestation it signs — a paired host's report must carry one.
     */
    signer?: IntervalSigner | undefined;
  }): Promise<TurnLease[]>;
  /** Keep leases; `lost` lists those no longer this holder's (stop working on them at once). */
  heartbeat(holder: string, leases: readonly { runId: string; epoch: number }[]): Promise<{ lost: string[] }>;
  /**
   * Report a transition; a stale epoch is `stale_lease` and changes nothing. Answers the record's head
   * after it (after `resumed`: the head the new interval starts at).
   */
  report(lease: LeaseRef, report: TurnReport): Promise<{ recordHead: string }>;
  /**
   * This holder cannot resume the parked turn it leased (the record refused its manifest, or the snapshot):
   * the lease is released at once (no attempt counted) and the turn not offered to it again while it declares
   * the same `capabilities` (its lease request's; default: this build's `hostCapabilities()`) — or it fails
   * `no_compatible_host` when no paired host is left to take it. A stale epoch is `stale_lease`; a retry of
   * the same decline answers the same.
   */
  decline(
    lease: LeaseRef,
    why: { reason: DeclineReason; message?: string; capabilities?: readonly string[] },
  ): Promise<TurnDeclined>;

  /** A page of the turn's transcript (its trajectory). */
  readTranscript(runId: string, page: { offset: number; limit: number }): Promise<TranscriptPage>;
  /** Append events (numbered by the caller) to the leased turn's transcript. */
  appendTranscript(lease: LeaseRef, events: readonly TraceEvent[]): Promise<void>;

  /** A caused `command` run through the one gate, drawing from the turn's envelope (402/429 refusals). */
  startCommandRun(lease: LeaseRef, callId: string, spec: CommandRunSpec): Promise<{ runId: string }>;
  /** An experiment group of eval runs of a registered harness version, each caused by the turn through the gate. */
  startExperiment(
    lease: LeaseRef,
    callId: string,
    spec: ExperimentSpec,
  ): Promise<{ groupId: string; runIds: string[] }>;
  /** A run's outputs or a page of its trajectory (same tenant only). */
  readRun(
    lease: LeaseRef,
    runId: string,
    view: RunView,
    page: { offset: number; limit: number },
  ): Promise<JsonValue>;
  /** Ask a person; the answer arrives as a Resolution (POST /runs/:id/input). */
  requestApproval(lease: LeaseRef, callId: string, question: string): Promise<void>;
  /** Wait for one call's result inside the interval — only the blocking mode does this. */
  awaitResolution(lease: LeaseRef, callId: string, signal?: AbortSignal): Promise<Resolution>;
}
