// Configuration of the process driver, parsed with zod. Every path has an environment-variable default
// so a host configures it once: EVERDICT_PLACEMENT_DIR (state: label files, workspaces, logs),
// EVERDICT_IMAGES_DIR (named root filesystems), EVERDICT_BWRAP (the bubblewrap binary).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

export const LimitsMode = z.enum(['auto', 'cgroup-v2', 'cgroup-v1', 'rlimit']);

/** Something the driver worked around that its host may want logged (`onWarning`). */
export interface ProcessDriverWarning {
  /** `cgroup_leave_failed`: bubblewrap could not be moved back out of a sandbox's cgroups (README, Limits). */
  readonly code: 'cgroup_leave_failed';
  readonly message: string;
}

export type ProcessDriverWarningListener = (warning: ProcessDriverWarning) => void;
export type LimitsMode = z.infer<typeof LimitsMode>;

export const ProcessDriverConfig = z.strictObject({
  /** Label files, workspaces and logs live here (one directory per host; `reap` reads it). */
  stateDir: z
    .string()
    .min(1)
    .default(() => process.env.EVERDICT_PLACEMENT_DIR ?? join(tmpdir(), 'everdict-placement')),
  /** Named root filesystems: `<imagesDir>/<name>/` (see importImage). */
  imagesDir: z
    .string()
    .min(1)
    .default(() => process.env.EVERDICT_IMAGES_DIR ?? join(tmpdir(), 'everdict-images')),
  bwrap: z
    .string()
    .min(1)
    .default(() => process.env.EVERDICT_BWRAP ?? 'bwrap'),
  /** Sandboxes this driver holds at once. */
  slots: z.int().positive().default(32),
  /**
   * The host user the sandbox runs as (bubblewrap is started as it, so the sandbox is unprivileged on the
   * host even if the driver runs as root). Ignored when the driver is not root.
   */
  sandboxUid: z.int().nonnegative().default(65534),
  sandboxGid: z.int().nonnegative().default(65534),
  /** Which limit mechanism to use: `auto` picks cgroup v2, then the v1 controllers, then rlimits. */
  limits: LimitsMode.default('auto'),
  /** The cgroup (relative to each hierarchy's root) under which sandbox cgroups are made. */
  cgroupParent: z
    .string()
    .regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/)
    .default('everdict'),
  /** The log of a sandbox keeps at most this many bytes (then it notes the cut and stops growing). */
  logCapBytes: z
    .int()
    .positive()
    .default(16 * 1024 * 1024),
  /**
   * How bubblewrap is started: `process` — by the driver's spawner, a small long-lived process (a fork
   * of a few MB instead of the driver's whole process per command; spawner/, `spawnerProgram`); `inline` — with
   * child_process.spawn from the driver's own process. Default: EVERDICT_PLACEMENT_SPAWNER, else `process`.
   */
  spawner: z
    .enum(['process', 'inline'])
    .default(() => (process.env.EVERDICT_PLACEMENT_SPAWNER === 'inline' ? 'inline' : 'process')),
  /**
   * Which program the spawner is (`spawner: 'process'`): `auto` — the native one (C, built into
   * `<stateDir>/bin` by the system's `cc` on the first command, spawner/native.ts), else, with no
   * compiler, the Node one; `node` — always the Node one. Default: EVERDICT_PLACEMENT_SPAWNER_PROGRAM, else `auto`.
   */
  spawnerProgram: z
    .enum(['auto', 'node'])
    .default(() => (process.env.EVERDICT_PLACEMENT_SPAWNER_PROGRAM === 'node' ? 'node' : 'auto')),
  /**
   * Sandboxes' directories made ahead (a fresh workspace and fresh cgroups each, ready-pool.ts), so a
   * provision does not make them on its path; 0: none. At most `slots` are kept: with fewer, a burst of
   * provisions (a runner's slots freed together) empties the pool faster than it refills under load.
   */
  readyPool: z.int().nonnegative().default(16),
  /**
   * The largest workspace archive `snapshot` reads (it is held in memory): past it the archiver is stopped
   * and the snapshot refused (`output_capped`) — a sparse file costs a sandbox no disk, its archive all of it.
   */
  snapshotCapBytes: z
    .int()
    .positive()
    .default(1024 * 1024 * 1024),
  /** How often a command's CPU time is checked against `limits.cpuTimeMs`. */
  cpuPollMs: z.int().positive().default(100),
  /**
   * Told of a ProcessDriverWarning, once per driver and code. Default: `process.emitWarning(message,
   * {code: 'EVERDICT_CGROUP_LEAVE_FAILED'})` — Node prints it on stderr, `process.on('warning')` sees it.
   */
  onWarning: z.custom<ProcessDriverWarningListener>((v) => typeof v === 'function', 'a function').optional(),
});
export type ProcessDriverConfig = z.output<typeof ProcessDriverConfig>;
export type ProcessDriverConfigInput = z.input<typeof ProcessDriverConfig>;
