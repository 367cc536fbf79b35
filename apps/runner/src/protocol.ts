// The runner protocol's answers as the runner parses them (docs/runner-protocol.md): whatever the control
// plane sends is checked here before the daemon acts on it.
import { JsonObject, TraceEvent } from '@everdict/run-model';
import { z } from 'zod';

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/);

export const HarnessSpec = z.object({
  id: z.string().min(1),
  version: z.string().min(1),
  image: z.string().min(1),
  command: z.array(z.string()).min(1),
});
export type HarnessSpec = z.infer<typeof HarnessSpec>;

export const Lease = z.object({
  runId: z.string().min(1),
  tenant: z.string().min(1),
  kind: z.string().min(1),
  epoch: z.int().min(1),
  attempt: z.int().min(0),
  spec: z.object({
    kind: z.string(),
    subject: z.unknown(),
    placement: z.unknown().optional(),
    lifetime: z.string().optional(),
    limits: z.record(z.string(), z.unknown()).optional(),
  }),
  unitId: Hex64,
  grantsId: Hex64,
  recordHead: Hex64,
  leaseMs: z.int().positive(),
  heartbeatMs: z.int().positive(),
  /** What the run's grants allow its sandbox (absent from an older control plane: nothing). */
  grants: z.object({ network: z.enum(['none', 'granted']) }).default({ network: 'none' }),
  /** The trajectory seq this interval's first event takes (the events of earlier attempts come before). */
  seqFrom: z.int().min(0).default(0),
  harness: HarnessSpec.optional(),
});
export type Lease = z.infer<typeof Lease>;

export const LeasesAnswer = z.object({ leases: z.array(Lease) });
export const HeartbeatAnswer = z.object({ lost: z.array(z.string()), draining: z.boolean() });
export type HeartbeatAnswer = z.infer<typeof HeartbeatAnswer>;
/** `POST /runner/v1/completions`: one result per item, in order (the settled run itself is not needed here). */
export const CompletionsAnswer = z.object({
  results: z.array(
    z.object({
      runId: z.string(),
      status: z.number().int(),
      outcome: z.enum(['settled', 'refused', 'skipped']),
      problem: z.unknown().optional(),
    }),
  ),
  /** The next leases, when the request asked for them (`next: {free}`). */
  leases: z.array(Lease).optional(),
});
export type CompletionsAnswer = z.infer<typeof CompletionsAnswer>;

/** A command run's subject: an argv, and an image (`default` when absent). */
export const CommandSubject = z.object({
  command: z.array(z.string()).min(1),
  image: z.string().min(1).optional(),
  path: z.string().optional(),
});
/** An eval run's subject: which harness, which case, and the case itself. */
export const EvalSubject = z.object({
  harness: z.object({ id: z.string(), version: z.string() }),
  caseId: z.string().min(1),
  caseSpec: JsonObject.optional(),
});

/** What a harness writes to out/outputs.json. */
export const HarnessOutputs = z.strictObject({
  summary: z.string().max(100_000).optional(),
  result: z.json().optional(),
  exitCode: z.int().optional(),
});
export type HarnessOutputs = z.infer<typeof HarnessOutputs>;

export { TraceEvent };

export interface Capabilities {
  drivers: ('process' | 'kubernetes')[];
  kinds: ('command' | 'eval' | 'sandbox')[];
  images: string[];
  slots: number;
  namespaces?: string[];
}

export interface Artifact {
  name: string;
  uri: string;
  bytes: number;
  digest: string;
}

export interface CompleteBody {
  epoch: number;
  outputs: {
    summary?: string;
    exitCode?: number;
    result?: unknown;
    artifacts?: Artifact[];
  };
  usage?: Record<string, number>;
  /** The wire form of the signed `sandbox.attestation/1` body. */
  attestation: Record<string, unknown>;
  account?: { dispatched: string[]; resolved: string[] };
}
