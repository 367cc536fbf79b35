// The agent bridge's input (POST /internal/agent-run-events): what an agent host reports of a leased turn's
// interval — its event, transcript and manifest addresses, account, usage, error and attestation.
import { JsonValue, PermissionMode, RunError, Usage } from '@everdict/run-model';
import { z } from 'zod';
import { INT4_MAX } from './column-bounds.js';

export const AgentRunEventInput = z.object({
  /** Absent on `started` to open a new agent run; required afterwards. */
  runId: z.string().optional(),
  event: z.enum(['started', 'awaiting_input', 'suspended', 'resumed', 'succeeded', 'failed', 'cancelled']),
  cause: z.enum(['event', 'chat']).default('event'),
  agent: z
    .object({
      agentId: z.string(),
      agentVersion: z.string().default('0'),
      model: z.string().optional(),
      conversationId: z.string().optional(),
      /** run-model's PermissionMode; absent → `ask` (the agent asks before acting: the safe default). */
      permissionMode: PermissionMode.default('ask'),
    })
    .optional(),
  eventId: z.string().optional(),
  groupId: z.string().optional(),
  requestId: z.string().optional(),
  /**
   * Transcript address (64 hex): REQUIRED on awaiting_input/suspended (the snapshot parked; none is ever
   * invented) and on resumed (the snapshot offered; a different one is 409 `snapshot_mismatch`).
   */
  transcript: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /**
   * The agent environment's manifest address (64 hex) at a park and at a resume (the RESUMING
   * environment's); absent → the run's own (kind + agent). A resume whose manifest differs from the
   * parked one is 409 `manifest_mismatch`.
   */
  manifest: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /**
   * The calls the agent dispatched / saw resolved during the interval that ends with this report (call
   * ids). Absent → the interval carries no account and the record's account verdict is `no_verdict`.
   */
  account: z
    .strictObject({
      dispatched: z.array(z.string().min(1).max(256)).max(10_000),
      resolved: z.array(z.string().min(1).max(256)).max(10_000),
    })
    .optional(),
  /** What the run left (run-model outputs: graders read `summary`, `result`, `exitCode`). */
  outputs: z
    .strictObject({
      summary: z.string().optional(),
      result: JsonValue.optional(),
      /** A process exit code: 32-bit, as the run record's attestation holds it. */
      exitCode: z
        .int()
        .min(-(INT4_MAX + 1))
        .max(INT4_MAX)
        .optional(),
    })
    .optional(),
  /** What the run used, in run-model's `Usage` terms (each field non-negative and finite); any subset. */
  usage: Usage.partial().optional(),
  /** A `failed` report's error: run-model's `RunError` (a non-empty code; retryable and detail kept). */
  error: RunError.optional(),
  /** A leased turn (src/agents/): the lease's epoch and holder; a stale one is 409 `stale_lease`. */
  epoch: z.int().positive().max(INT4_MAX).optional(),
  holder: z.string().min(1).max(200).optional(),
  /** A transcript park: the canonical bytes of the transcript parked (its idle energy's input). */
  transcriptBytes: z.int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  /**
   * A paired agent host's `sandbox.attestation/1` (wire body, signed) of the interval this report ends —
   * required from a paired host (agents/attestation.ts), refused from an unpaired holder.
   */
  attestation: z.record(z.string(), z.unknown()).optional(),
});
export type AgentRunEventInput = z.input<typeof AgentRunEventInput>;
