// What a caller asks a driver for (ProvisionSpec) and what it gets back (SandboxHandle), parsed with zod at
// the boundary. A handle is plain JSON: it can be stored on a run row and handed to another process.
import { Id, ImageRef, RunKind } from '@everdict/run-model';
import { z } from 'zod';

/** The drivers of the placement ladder. Open: a driver outside this package names itself. */
export const DriverName = z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, 'a driver name is lower-case [a-z0-9-]');
export type DriverName = z.infer<typeof DriverName>;

/** Who a sandbox belongs to; `reap` selects by these. Every sandbox carries all three. */
export const Labels = z.strictObject({ tenant: Id, runId: Id, kind: RunKind });
export type Labels = z.infer<typeof Labels>;

/** A subset of the labels, for `reap`: a sandbox matches when every given label is equal. */
export const LabelSelector = Labels.partial();
export type LabelSelector = z.infer<typeof LabelSelector>;

/**
 * The longest wall timeout a sandbox or a command may ask for: 366 days. Past setTimeout's 2^31 − 1 ms
 * (24.8 days) drivers wait in steps (deadline.ts `wallTimer`), so every value up to this bound is kept
 * exactly; the bound keeps deadlines (createdAtMs + wallTimeoutMs) well inside exact integers.
 */
export const MAX_WALL_TIMEOUT_MS = 366 * 24 * 60 * 60 * 1000;

export const DEFAULT_LIMITS = Object.freeze({
  memoryBytes: 512 * 1024 * 1024,
  pids: 256,
  wallTimeoutMs: 60 * 60 * 1000,
});

/**
 * Resource limits of one sandbox (all of its processes together). `cpuTimeMs` is total CPU time across
 * every command (reaching it is `timeout`); `cpus` is a share of cores (a rate, not a total);
 * `wallTimeoutMs` is the sandbox's deadline counted from provision — no command runs past it (like a
 * pod's activeDeadlineSeconds). A driver reports in capacity() which mechanism enforces them.
 */
export const ResourceLimits = z.strictObject({
  cpuTimeMs: z.int().positive().optional(),
  cpus: z.number().positive().max(1024).optional(),
  memoryBytes: z.int().positive().default(DEFAULT_LIMITS.memoryBytes),
  pids: z.int().positive().max(1_000_000).default(DEFAULT_LIMITS.pids),
  wallTimeoutMs: z.int().positive().max(MAX_WALL_TIMEOUT_MS).default(DEFAULT_LIMITS.wallTimeoutMs),
});
export type ResourceLimits = z.output<typeof ResourceLimits>;
export type ResourceLimitsInput = z.input<typeof ResourceLimits>;

/**
 * The network a sandbox may use. `none`: nothing but its own loopback. `granted`: the driver's outward
 * network (process: the host's network namespace; kubernetes: the pod network).
 */
export const NetworkGrant = z.enum(['none', 'granted']);
export type NetworkGrant = z.infer<typeof NetworkGrant>;

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name');
export const Env = z.record(
  EnvName,
  z.string().refine((v) => !v.includes('\0'), 'no NUL in a value'),
);
export type Env = z.infer<typeof Env>;

/** Bytes (any Uint8Array, Buffers included). */
export const Bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'bytes (a Uint8Array)');

/** A content-addressed workspace archive: a deterministic POSIX tar and the BLAKE3 of its bytes. */
export const Snapshot = z.strictObject({
  address: z.string().regex(/^[0-9a-f]{64}$/, 'a BLAKE3 address (64 lowercase hex)'),
  bytes: Bytes,
});
export type Snapshot = z.infer<typeof Snapshot>;

/**
 * A directory inside the workspace: relative, `/`-separated, no empty, `.` or `..` segment, no NUL.
 * What the sandbox's commands see at `<workspace>/<path>`.
 */
export const WorkspacePath = z
  .string()
  .min(1)
  .max(1024)
  .refine(
    (s) => !s.includes('\0') && s.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..'),
    'a relative path inside the workspace (no empty, "." or ".." segment, no leading "/")',
  );
export type WorkspacePath = z.infer<typeof WorkspacePath>;

/** The most directories one spec may ask to be made. */
export const MAX_WORKSPACE_DIRECTORIES = 64;

/**
 * What to provision. `image`: what the sandbox's root filesystem is (process: `default` or a name under
 * EVERDICT_IMAGES_DIR; kubernetes: a container image). `workspace`: a snapshot to seed the workspace with
 * (restored before the handle is returned). `directories`: directories (parents too) that exist in the
 * workspace, owned by the sandbox's user and writable by it, before the handle is returned — after the
 * seeding snapshot, whose own entries stay; one already there as a directory is kept, anything else at
 * that path (a file, a symlink) refuses the provision (`spawn_failed`). It saves a command its own
 * `mkdir -p` (a shell started inside the sandbox before the command). Provisioning is idempotent per
 * (tenant, run id): the first spec wins, its directories included.
 */
export const ProvisionSpec = z.strictObject({
  image: ImageRef.default('default'),
  workspace: Snapshot.optional(),
  directories: z.array(WorkspacePath).max(MAX_WORKSPACE_DIRECTORIES).default([]),
  env: Env.default({}),
  limits: ResourceLimits.default(ResourceLimits.parse({})),
  network: NetworkGrant.default('none'),
  labels: Labels,
});
export type ProvisionSpec = z.output<typeof ProvisionSpec>;
export type ProvisionSpecInput = z.input<typeof ProvisionSpec>;

const Hex32 = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * The environment a sandbox runs in, content-addressed: `address` = BLAKE3 of the canonical JSON
 * {"driver","image","imageDigest"}. `imageDigest` is null when the driver cannot pin the image (the
 * process driver's `default` image is the live host filesystem) — never a made-up value.
 */
export const Environment = z.strictObject({
  driver: DriverName,
  image: ImageRef,
  imageDigest: z.string().min(1).nullable(),
  address: Hex32,
});
export type Environment = z.infer<typeof Environment>;

/** A provisioned sandbox. Plain JSON; `id` is stable per (tenant, run id) on a given driver. */
export const SandboxHandle = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/),
  driver: DriverName,
  labels: Labels,
  environment: Environment,
  limits: ResourceLimits,
  network: NetworkGrant,
  /** Epoch ms when the sandbox was first provisioned (a repeated provision returns the original). */
  createdAtMs: z.number().int().nonnegative(),
  /** Epoch ms past which no command runs (createdAtMs + limits.wallTimeoutMs). */
  deadlineMs: z.number().int().nonnegative(),
});
export type SandboxHandle = z.infer<typeof SandboxHandle>;

export function parseProvisionSpec(input: ProvisionSpecInput): ProvisionSpec {
  return ProvisionSpec.parse(input);
}

export function parseHandle(input: unknown): SandboxHandle {
  return SandboxHandle.parse(input);
}
