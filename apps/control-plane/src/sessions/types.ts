// The sessions module's boundary: request bodies (zod, strict) and the views it answers with.
import { AttachChannels, ImageRef, MAX_SESSION_TTL_SEC, Placement } from '@everdict/run-model';
import { z } from 'zod';

const seconds = z.int().positive().max(MAX_SESSION_TTL_SEC);

/** POST /sandboxes. `ttlSec`: hard expiry from now; `idleTimeoutSec`: closed after this long without traffic. */
export const OpenSandboxInput = z.strictObject({
  image: ImageRef.optional(),
  ttlSec: seconds,
  idleTimeoutSec: seconds,
  attach: AttachChannels.optional(),
  placement: Placement.optional(),
  requestId: z.string().min(1).max(200).optional(),
});
export type OpenSandboxInput = z.input<typeof OpenSandboxInput>;

/** Idle timeout of a session opened through `POST /runs` (which has no field for it): 15 minutes, or its TTL. */
export const DEFAULT_IDLE_TIMEOUT_SEC = 900;

/** Bytes kept of each exec stream. */
export const EXEC_OUTPUT_CAP = 1024 * 1024;

export const ExecInput = z.strictObject({
  command: z
    .array(z.string().max(128 * 1024))
    .min(1)
    .max(4096),
  timeoutMs: z
    .int()
    .positive()
    .max(24 * 60 * 60 * 1000)
    .optional(),
});
export type ExecInput = z.input<typeof ExecInput>;

export const TouchInput = z.strictObject({ ttlSec: seconds });
export type TouchInput = z.input<typeof TouchInput>;

export const ResumeInput = z.strictObject({
  /** The snapshot offered (BLAKE3 address); default: the one parked. Another is refused 409. */
  snapshot: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});
export type ResumeInput = z.input<typeof ResumeInput>;

/**
 * How an exec ended: `exited` (any exit code), a limit that stopped it (its partial output kept), or
 * `not_started`: its program could not be started — none by that name (exit code 127) or not executable
 * (126), as a shell counts them, the driver's message on stderr. The sandbox itself is as it was.
 */
export const ExecOutcome = z.enum([
  'exited',
  'timeout',
  'oom',
  'pids_exhausted',
  'output_capped',
  'not_started',
]);

export const ExecView = z.object({
  exitCode: z.int().nullable(),
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  truncated: z.boolean(),
  outcome: ExecOutcome,
  durationMs: z.number().nonnegative(),
});
export type ExecView = z.infer<typeof ExecView>;

export const SessionView = z.object({
  id: z.string(),
  status: z.string(),
  state: z.enum(['open', 'parked']),
  image: z.string(),
  createdBy: z.string(),
  holder: z.string(),
  openedAt: z.string(),
  expiresAt: z.string(),
  ttlLeftSec: z.number().nonnegative(),
  idleTimeoutSec: z.int(),
  idleDeadline: z.string(),
  idleLeftSec: z.number().nonnegative().nullable(),
  lastActivityAt: z.string(),
  /** What the session has drawn so far (open and parked time; estimated). */
  burn: z.object({
    usdPerHour: z.number().nonnegative(),
    usd: z.number().nonnegative(),
    energyUj: z.number().nonnegative(),
    provenance: z.literal('estimated'),
  }),
  snapshot: z.string().nullable(),
});
export type SessionView = z.infer<typeof SessionView>;

export const TicketView = z.object({ ticket: z.string(), expiresAt: z.string() });
export type TicketView = z.infer<typeof TicketView>;
