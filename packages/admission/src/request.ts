// The gate's input: a small projection of a run spec. Not a Run shape — the run model owns that.
import { RunCause, RunClass, RunKind, RunLifetime } from '@everdict/run-model';
import { z } from 'zod';
import { parseOrThrow } from './errors.js';
import { EnvelopeCaps, MAX_COUNT } from './policy.js';

const id = z.string().min(1).max(256);

export const AdmissionRequest = z.object({
  /** Idempotency key, scoped by tenant: the same key returns the first admission, never charges twice. */
  requestId: id,
  /** The run being admitted (ids are the caller's, the gate never mints one). */
  runId: id,
  tenant: id,
  kind: RunKind,
  cause: RunCause,
  /** Requested class; see class.ts for what an autonomous cause may ask for. */
  class: RunClass.optional(),
  lifetime: RunLifetime.default('task'),
  /** The causer, from trusted attribution (never client-supplied): this run draws from its envelope. */
  causedByRunId: id.optional(),
  /** For kind "agent": which agent is being activated (a disabled agent is refused). */
  agentId: id.optional(),
  /** The delegated slice this run is activated with; its children then draw from it. */
  envelope: z
    .object({
      id,
      caps: EnvelopeCaps.optional(),
      inFlightCap: z.number().int().positive().max(MAX_COUNT).optional(),
    })
    .optional(),
  /** Estimated cost: admission also needs this much balance left (a check, not a reservation). */
  estimate: z
    .object({ usd: z.number().nonnegative().default(0), tokens: z.number().nonnegative().default(0) })
    .optional(),
  /**
   * A tighter causal-depth bound from whatever causes this run (a subscription's maxDepth): the gate's one
   * depth guard refuses at min(this, the tenant's maxCausalDepth).
   */
  maxCausalDepth: z.number().int().nonnegative().optional(),
  /** Expected run time once dispatched (a session's TTL); feeds 429 retry hints. */
  expectedDurationMs: z.number().int().positive().optional(),
});
export type AdmissionRequest = z.infer<typeof AdmissionRequest>;
export type AdmissionRequestInput = z.input<typeof AdmissionRequest>;

export function parseAdmissionRequest(input: unknown): AdmissionRequest {
  return parseOrThrow(AdmissionRequest, input, 'admission request');
}
