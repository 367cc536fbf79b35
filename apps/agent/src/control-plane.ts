// The ControlPlane port: every call the agent service makes to the control plane, in the domain's words.
// Two seats: `LocalControlPlane` (a directory ledger for the local demo and the tests, admission by
// @everdict/admission's real gate) and the HTTP adapter over the control plane's agent routes, to be wired
// once they exist (README, "What waits for the control plane"). A refusal is always an AgentError with its
// code and status — a 402 from the envelope reaches the model as a tool error, never as a pretend result.
import type { JsonValue, TraceEvent } from '@everdict/run-model';
import type { WireRecord } from '@everdict/runrecord';
import { z } from 'zod';
import { AgentSpec } from './agent-spec.js';

/** What a parked call waits for, once it arrives. */
export const Resolution = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('approval'),
    callId: z.string().min(1),
    approved: z.boolean(),
    note: z.string().max(10_000).optional(),
    by: z.string().min(1).optional(),
  }),
  z.strictObject({
    kind: z.literal('run'),
    callId: z.string().min(1),
    runId: z.string().min(1),
    status: z.enum(['succeeded', 'failed', 'cancelled']),
    outputs: z.json().optional(),
  }),
]);
export type Resolution = z.infer<typeof Resolution>;

/** A leased turn: the same lease/heartbeat/epoch rules as a runner's (docs/runner-protocol.md). */
export const TurnLease = z.strictObject({
  runId: z.string().min(1),
  tenant: z.string().min(1),
  epoch: z.int().positive(),
  leaseMs: z.int().positive(),
  heartbeatMs: z.int().positive(),
  unitId: z.string().regex(/^[0-9a-f]{64}$/),
  grantsId: z.string().regex(/^[0-9a-f]{64}$/),
  agent: AgentSpec,
  /** The record so far (wire form), or null for a turn that never ran. */
  record: z.unknown().nullable(),
  /** When the turn parked (epoch ms), if it is resuming a park. */
  parkedAtMs: z.int().nonnegative().optional(),
  /** The member's message that opened the turn (first interval only). */
  input: z.strictObject({ text: z.string() }).optional(),
  /** Results that arrived for the turn's outstanding calls. */
  resolutions: z.array(Resolution),
});
export type TurnLease = z.infer<typeof TurnLease>;

export interface LeaseRef {
  readonly runId: string;
  readonly epoch: number;
}

/** A transition the agent reports (POST /internal/agent-run-events, with the lease's epoch). */
export interface TurnReport {
  readonly event: 'awaiting_input' | 'succeeded' | 'failed';
  /** The record after the interval (the control plane verifies it extends the one it holds). */
  readonly record: WireRecord;
  /** The transcript address the park recorded (awaiting_input). */
  readonly transcript?: string;
  readonly outstanding?: readonly string[];
  readonly outputs?: { summary?: string };
  readonly usage: { inputTokens: number; outputTokens: number; costUsd: number; llmCalls: number };
  readonly error?: { code: string; message: string };
}

export interface CommandRunSpec {
  readonly command: readonly string[];
  readonly image?: string;
}

export interface ExperimentSpec {
  readonly harness: string;
  readonly dataset?: string;
}

export type RunView = 'outputs' | 'trajectory';

export interface ControlPlane {
  /** Long-poll for ready turns (new, or a park whose calls are all resolved). */
  lease(request: { free: number; holder: string; waitMs?: number }): Promise<TurnLease[]>;
  /** Keep leases; `lost` lists those no longer this holder's (stop working on them at once). */
  heartbeat(holder: string, leases: readonly LeaseRef[]): Promise<{ lost: string[] }>;
  /** Report a transition; a stale epoch is `stale_lease` and changes nothing. */
  report(lease: LeaseRef, report: TurnReport): Promise<void>;

  /** A caused `command` run through the one gate, drawing from the turn's envelope (402/429 refusals). */
  startCommandRun(lease: LeaseRef, callId: string, spec: CommandRunSpec): Promise<{ runId: string }>;
  /** A caused `eval` experiment through the gate. */
  startExperiment(lease: LeaseRef, callId: string, spec: ExperimentSpec): Promise<{ runId: string }>;
  /** A run's outputs or a page of its trajectory (same tenant only). */
  readRun(
    lease: LeaseRef,
    runId: string,
    view: RunView,
    page: { offset: number; limit: number },
  ): Promise<JsonValue | { events: TraceEvent[]; nextOffset: number }>;
  /** Ask a person; the answer arrives as a Resolution (POST /runs/:id/input). */
  requestApproval(lease: LeaseRef, callId: string, question: string): Promise<void>;
  /** Wait for one call's result inside the interval — only the blocking mode does this. */
  awaitResolution(lease: LeaseRef, callId: string, signal?: AbortSignal): Promise<Resolution>;
}
