// Process configuration, parsed once from the environment with zod. Nothing else reads process.env.
import path from 'node:path';
import { z } from 'zod';

const optionalString = z
  .string()
  .transform((s) => s.trim())
  .pipe(z.string())
  .optional()
  .transform((s) => (s === undefined || s === '' ? undefined : s));

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(8787),
  HOST: optionalString,
  DATABASE_URL: optionalString,
  EVERDICT_DATA_DIR: optionalString,
  EVERDICT_SIGNING_KEY_FILE: optionalString,
  EVERDICT_BOOTSTRAP_API_KEY: optionalString.pipe(z.string().min(16).max(512).optional()),
  EVERDICT_INTERNAL_TOKEN: optionalString.pipe(z.string().min(16).max(512).optional()),
  EVERDICT_METRICS_TOKEN: optionalString.pipe(z.string().min(16).max(512).optional()),
  EVERDICT_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  // S3's CopyObject (the S3 backend's move to the content address) takes at most 5 GiB.
  EVERDICT_ARTIFACT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(5 * 1024 ** 3)
    .default(5 * 1024 ** 3),
  EVERDICT_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  EVERDICT_LEASE_MS: z.coerce.number().int().min(50).max(3_600_000).default(10_000),
  EVERDICT_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(3),
  EVERDICT_EXECUTIONS: z.coerce.number().int().min(1).max(1024).default(16),
  EVERDICT_PG_POOL_MAX: z.coerce.number().int().min(2).max(1000).default(10),
  EVERDICT_CREATE_BATCH_MS: z.coerce.number().int().min(0).max(1000).default(0),
  EVERDICT_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  EVERDICT_ALONE_POLL_MS: z.coerce.number().int().min(10).max(600_000).optional(),
  EVERDICT_VACUUM_CHECK_MS: z.coerce
    .number()
    .int()
    .max(3_600_000)
    .refine((ms) => ms === 0 || ms >= 100, '0 (off) or at least 100 ms')
    .default(2_000),
  EVERDICT_JUDGE: z.enum(['scripted', 'none']).default('scripted'),
  EVERDICT_S3_BUCKET: optionalString,
  EVERDICT_S3_ENDPOINT: optionalString,
  EVERDICT_S3_REGION: optionalString,
  EVERDICT_SESSIONS: z.enum(['process', 'runner', 'off']).default('process'),
  EVERDICT_SESSION_SWEEP_MS: z.coerce.number().int().min(50).max(3_600_000).default(1_000),
  EVERDICT_PLACEMENT_DIR: optionalString,
  EVERDICT_LOG_KEY_FILE: optionalString,
  EVERDICT_WITNESS_KEYS: optionalString,
  EVERDICT_STH_INTERVAL_MS: z.coerce.number().int().min(10).max(3_600_000).default(2_000),
  EVERDICT_EMBEDDED_RUNNER: z.enum(['0', '1']).default('1'),
  EVERDICT_EMBEDDED_RUNNER_SLOTS: z.coerce.number().int().min(1).max(256).default(4),
  EVERDICT_RUNNER_CLI: optionalString,
  EVERDICT_AGENT_REQUIRE_PAIRED: z.enum(['0', '1']).default('0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface Config {
  readonly port: number;
  readonly host: string | undefined;
  /** PostgreSQL connection string; absent → embedded PGlite under `dataDir`. */
  readonly databaseUrl: string | undefined;
  /** Where PGlite's files and local objects live. */
  readonly dataDir: string;
  /** The control plane's Ed25519 key file (created mode 0600 on first start): default `<dataDir>/keys/control-plane.ed25519`. */
  readonly signingKeyFile: string;
  /** When set, a first start creates tenant `default` with this admin key; unset → one is generated. */
  readonly bootstrapApiKey: string | undefined;
  /** Service token for `/internal/*`; unset → internal endpoints refuse every call. */
  readonly internalToken: string | undefined;
  /** Bearer token for per-tenant series on /metrics; unset → /metrics shows aggregates only. */
  readonly metricsToken: string | undefined;
  readonly maxBodyBytes: number;
  /** The largest artifact a runner may upload (EVERDICT_ARTIFACT_MAX_BYTES, default and most 5 GiB). */
  readonly artifactMaxBytes: number;
  readonly shutdownGraceMs: number;
  /** A running execution's lease lasts this long without a heartbeat (EVERDICT_LEASE_MS). */
  readonly leaseMs: number;
  /** Lost executions of a run (not its starts: a resume is none) after which it fails `executor_lost` (EVERDICT_MAX_ATTEMPTS). */
  readonly maxAttempts: number;
  /** Inline executions at once in this process (EVERDICT_EXECUTIONS). */
  readonly executions: number;
  /** PostgreSQL pool size (EVERDICT_PG_POOL_MAX); ignored on PGlite. */
  readonly pgPoolMax: number;
  /** Under load, how long a create waits for company before its batch is written (EVERDICT_CREATE_BATCH_MS). */
  readonly createBatchMs: number;
  /** The dispatch/trigger loops' poll fallback when no NOTIFY arrives (EVERDICT_POLL_MS). */
  readonly pollMs: number;
  /**
   * The announcement-driven loops' poll fallback while this process is alone on its database
   * (EVERDICT_ALONE_POLL_MS; default 5 × pollMs; db/fallback-poll.ts).
   */
  readonly alonePollMs: number;
  /**
   * The vacuum keeper's look at the dead-row statistics (EVERDICT_VACUUM_CHECK_MS, default 2,000; `0`: no
   * keeper). It vacuums only where no autovacuum runs: PGlite, or PostgreSQL with `autovacuum = off`.
   */
  readonly vacuumCheckMs: number;
  /** Who decides `judge` graders: the built-in deterministic `scripted` judge, or `none` (a 400). */
  readonly judge: 'scripted' | 'none';
  /** Where trajectories live: S3-compatible storage when `s3Bucket` is set, else `<dataDir>/trajectories`. */
  readonly trajectoryStorage: { s3Bucket?: string; s3Endpoint?: string; s3Region?: string };
  /**
   * The embedded runner (runners/embedded.ts): on by default (EVERDICT_EMBEDDED_RUNNER=1), so command and eval
   * runs execute on a fresh machine; `0` turns it off. `slots` = EVERDICT_EMBEDDED_RUNNER_SLOTS (default 4);
   * `cli` = EVERDICT_RUNNER_CLI (default: the workspace's built apps/runner/dist/cli.js).
   */
  readonly embeddedRunner: { enabled: boolean; slots: number; cli?: string };
  /**
   * Agent hosts (src/agents/hosts.ts): with EVERDICT_AGENT_REQUIRE_PAIRED=1 only paired, non-revoked agent
   * hosts may hold turn leases (an unpaired holder is 401 `invalid_agent_host`); default `0`: any holder.
   */
  readonly agents: { requirePaired: boolean };
  readonly logLevel: z.infer<typeof EnvSchema>['LOG_LEVEL'];
  /**
   * Held-open sandboxes: `process` (the embedded process driver, state in `placementDir`, and paired runners),
   * `runner` (paired runners only: this process holds no sandbox) or `off`.
   */
  readonly sessions: { driver: 'process' | 'runner' | 'off'; sweepMs: number; placementDir: string };
  /** The head log (issue 18 §2): key file (default `<dataDir>/keys/log.ed25519`), witness keys (hex), STH interval. */
  readonly headLog: { keyFile: string; witnessKeys: string | undefined; sthIntervalMs: number };
}

export class ConfigError extends Error {
  constructor(readonly issues: readonly z.core.$ZodIssue[]) {
    super(
      `invalid configuration: ${issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`).join('; ')}`,
    );
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(parsed.error.issues);
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(cwd, e.EVERDICT_DATA_DIR ?? '.everdict'),
    signingKeyFile: e.EVERDICT_SIGNING_KEY_FILE
      ? path.resolve(cwd, e.EVERDICT_SIGNING_KEY_FILE)
      : path.join(path.resolve(cwd, e.EVERDICT_DATA_DIR ?? '.everdict'), 'keys', 'control-plane.ed25519'),
    bootstrapApiKey: e.EVERDICT_BOOTSTRAP_API_KEY,
    internalToken: e.EVERDICT_INTERNAL_TOKEN,
    metricsToken: e.EVERDICT_METRICS_TOKEN,
    maxBodyBytes: e.EVERDICT_MAX_BODY_BYTES,
    artifactMaxBytes: e.EVERDICT_ARTIFACT_MAX_BYTES,
    shutdownGraceMs: e.EVERDICT_SHUTDOWN_GRACE_MS,
    leaseMs: e.EVERDICT_LEASE_MS,
    maxAttempts: e.EVERDICT_MAX_ATTEMPTS,
    executions: e.EVERDICT_EXECUTIONS,
    pgPoolMax: e.EVERDICT_PG_POOL_MAX,
    createBatchMs: e.EVERDICT_CREATE_BATCH_MS,
    pollMs: e.EVERDICT_POLL_MS,
    alonePollMs: e.EVERDICT_ALONE_POLL_MS ?? 5 * e.EVERDICT_POLL_MS,
    vacuumCheckMs: e.EVERDICT_VACUUM_CHECK_MS,
    judge: e.EVERDICT_JUDGE,
    logLevel: e.LOG_LEVEL,
    sessions: {
      driver: e.EVERDICT_SESSIONS,
      sweepMs: e.EVERDICT_SESSION_SWEEP_MS,
      placementDir: e.EVERDICT_PLACEMENT_DIR
        ? path.resolve(cwd, e.EVERDICT_PLACEMENT_DIR)
        : path.join(path.resolve(cwd, e.EVERDICT_DATA_DIR ?? '.everdict'), 'placement'),
    },
    headLog: {
      keyFile: e.EVERDICT_LOG_KEY_FILE
        ? path.resolve(cwd, e.EVERDICT_LOG_KEY_FILE)
        : path.join(path.resolve(cwd, e.EVERDICT_DATA_DIR ?? '.everdict'), 'keys', 'log.ed25519'),
      witnessKeys: e.EVERDICT_WITNESS_KEYS,
      sthIntervalMs: e.EVERDICT_STH_INTERVAL_MS,
    },
    embeddedRunner: {
      enabled: e.EVERDICT_EMBEDDED_RUNNER === '1',
      slots: e.EVERDICT_EMBEDDED_RUNNER_SLOTS,
      ...(e.EVERDICT_RUNNER_CLI ? { cli: path.resolve(cwd, e.EVERDICT_RUNNER_CLI) } : {}),
    },
    agents: { requirePaired: e.EVERDICT_AGENT_REQUIRE_PAIRED === '1' },
    trajectoryStorage: {
      ...(e.EVERDICT_S3_BUCKET ? { s3Bucket: e.EVERDICT_S3_BUCKET } : {}),
      ...(e.EVERDICT_S3_ENDPOINT ? { s3Endpoint: e.EVERDICT_S3_ENDPOINT } : {}),
      ...(e.EVERDICT_S3_REGION ? { s3Region: e.EVERDICT_S3_REGION } : {}),
    },
  };
}
