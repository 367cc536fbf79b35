// The runner protocol's bodies (docs/runner-protocol.md), as zod schemas: parsed at the HTTP boundary and
// again by the services (a service never trusts its caller to have parsed).
import { Harness, TraceEvent } from '@everdict/run-model';
import { z } from 'zod';

export const RUNNER_KINDS = ['command', 'eval', 'sandbox'] as const;
export const RunnerKind = z.enum(RUNNER_KINDS);
export type RunnerKind = z.infer<typeof RunnerKind>;

/**
 * The kinds a runner is leased (intervals): `sandbox` is not one — a runner registers it to hold session runs,
 * which the control plane places over its session channel (sessions/hub.ts), never as a lease.
 */
export const leasedKinds = (kinds: readonly RunnerKind[]): RunnerKind[] =>
  kinds.filter((k) => k !== 'sandbox');

/** What a runner can execute. `images: ["*"]` = any container image. */
export const Capabilities = z.strictObject({
  drivers: z.array(z.enum(['process', 'kubernetes'])).min(1),
  kinds: z.array(RunnerKind).min(1),
  images: z.array(z.string().min(1).max(1000)).min(1).max(1000),
  slots: z.int().min(1).max(10_000),
  namespaces: z.array(z.string().min(1).max(253)).max(100).optional(),
});
export type Capabilities = z.infer<typeof Capabilities>;

export const PairingTokenInput = z.strictObject({ name: z.string().min(1).max(200).optional() });
export type PairingTokenInput = z.input<typeof PairingTokenInput>;

const Hex64 = z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hex digits');

/**
 * The longest image reference a runner may pair with, in UTF-8 bytes: each (runner, kind, image) is a key of the
 * placement index, and a PostgreSQL btree entry holds at most 2704 bytes (1000 three-byte characters are 3000:
 * the insert would fail). Checked at pairing only: a stored runner's capabilities parse as they were accepted.
 */
export const MAX_IMAGE_BYTES = 1000;
const ImageRef = z
  .string()
  .min(1)
  .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_IMAGE_BYTES, `at most ${MAX_IMAGE_BYTES} UTF-8 bytes`);

/** A pairing proof: an Ed25519 signature, 128 lowercase hex (registry.ts `pairingMessage`, one per tag). */
export const PairingSignature = z.string().regex(/^[0-9a-f]{128}$/, '128 lowercase hex digits');

export const PairInput = z.strictObject({
  token: z.string().min(1).max(512),
  publicKey: Hex64,
  /** Ed25519 signature (128 lowercase hex) of `everdict-runner-pair/1\n<sha256(token) hex>\n<publicKey>` (registry.ts). */
  signature: PairingSignature,
  name: z.string().min(1).max(200),
  capabilities: Capabilities.extend({ images: z.array(ImageRef).min(1).max(1000) }),
});
export type PairInput = z.input<typeof PairInput>;

/** The longest a lease request may wait for work. */
export const MAX_WAIT_MS = 25_000;

export const LeasesInput = z.strictObject({
  free: z.int().min(0).max(10_000),
  waitMs: z.int().min(0).max(MAX_WAIT_MS).default(0),
});
export type LeasesInput = z.input<typeof LeasesInput>;

const Epoch = z.int().min(1).max(2_147_483_647);
export const LeaseRef = z.strictObject({ runId: z.string().min(1).max(200), epoch: Epoch });

export const HeartbeatInput = z.strictObject({ leases: z.array(LeaseRef).max(10_000) });
export type HeartbeatInput = z.input<typeof HeartbeatInput>;

export const EventsInput = z.strictObject({ epoch: Epoch, events: z.array(TraceEvent).max(10_000) });
export type EventsInput = z.input<typeof EventsInput>;

/**
 * A file's path under out/, in the normal form an archive holds it (placement's `normalizeEntryPath`): relative,
 * every component a plain name — no `..`, `.` or empty component (`a//b`, `./a`, `a/`), no NUL. Before, `a//b` and
 * `./a` were taken, and the run's archive (`GET /runs/:id/artifacts.tar`) could not hold them.
 */
const OutPath = z
  .string()
  .min(1)
  .max(1024)
  .refine(
    (p) =>
      !p.startsWith('/') &&
      !p.includes('\0') &&
      p.split('/').every((c) => c !== '' && c !== '.' && c !== '..'),
    'a relative path inside out/, each component a plain name',
  );

export const ArtifactQuery = z.strictObject({ epoch: z.coerce.number().pipe(Epoch), path: OutPath });

/** The most files one `artifacts:batch` call carries (the body limit bounds their bytes). */
export const MAX_BATCH_ARTIFACTS = 256;

/** `POST /runner/v1/runs/:id/artifacts:batch`: small files of out/, each whole, base64; paths distinct. */
export const ArtifactBatchInput = z.strictObject({
  epoch: Epoch,
  files: z
    .array(z.strictObject({ path: OutPath, content: z.base64() }))
    .min(1)
    .max(MAX_BATCH_ARTIFACTS)
    .refine((files) => new Set(files.map((f) => f.path)).size === files.length, 'each path once'),
});

/** An account as a runner reports it: the call ids dispatched and resolved during the interval. */
const Account = z.strictObject({
  dispatched: z.array(z.string().max(1000)).max(10_000),
  resolved: z.array(z.string().max(1000)).max(10_000),
});

export const CompleteInput = z.strictObject({
  epoch: Epoch,
  outputs: z.strictObject({
    summary: z.string().max(100_000).optional(),
    exitCode: z.int().min(-2_147_483_648).max(2_147_483_647).optional(),
    result: z.json().optional(),
    artifacts: z
      .array(
        z.strictObject({
          name: z.string().min(1),
          uri: z.string().min(1),
          contentType: z.string().optional(),
          bytes: z.int().nonnegative().optional(),
          digest: z.string().optional(),
        }),
      )
      .max(10_000)
      .optional(),
  }),
  usage: z.record(z.string(), z.number().nonnegative()).optional(),
  /** The interval's `sandbox.attestation/1` body in wire form (runrecord's `encodeAttestationBody`), signed. */
  attestation: z.record(z.string(), z.unknown()),
  account: Account.optional(),
});
export type CompleteInput = z.input<typeof CompleteInput>;

/** Most completions one `POST /runner/v1/completions` carries. */
export const MAX_COMPLETIONS = 64;

/** Several completions of one runner, in its audit chain's order (each names the one before). */
export const CompletionsInput = z.strictObject({
  items: z
    .array(CompleteInput.extend({ runId: z.string().min(1).max(200) }))
    .min(1)
    .max(MAX_COMPLETIONS),
  /**
   * The runner's next leases in the same answer: after the batch settled, up to `free` leases are granted
   * exactly as `POST /runner/v1/leases` grants them without waiting (`free` counts the runner's slots free
   * of compute — a slot frees when its interval's command is done, before that interval's completion — within
   * its lease bound, counting the settled items' leases as ended; the control plane still grants no more
   * than `leaseBound(slots)` (leases.ts: 2 × slots, its slots executing plus one settling behind each) minus
   * the leases it holds, and none at all unless every item settled).
   * A busy runner then needs no lease request of its own for slots a batch can carry.
   */
  next: z.strictObject({ free: z.int().min(0).max(10_000) }).optional(),
});

export const HarnessInput = Harness;
export type HarnessInput = z.input<typeof Harness>;
