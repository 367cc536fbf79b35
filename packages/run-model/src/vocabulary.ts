// The closed and open word lists every package speaks. Schemas and types are inferred from these.
import { z } from 'zod';

/** The five executable families; open: a new family is a new string, not a new ledger. */
export const KNOWN_RUN_KINDS = ['eval', 'agent', 'command', 'sandbox', 'analysis'] as const;
export const RunKind = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/);
export type RunKind = (typeof KNOWN_RUN_KINDS)[number] | (string & {});

export const RunStatus = z.enum(['queued', 'running', 'awaiting_input', 'succeeded', 'failed', 'cancelled']);
export type RunStatus = z.infer<typeof RunStatus>;

export const TERMINAL_STATUSES = ['succeeded', 'failed', 'cancelled'] as const satisfies readonly RunStatus[];

export const RunCause = z.enum(['member', 'schedule', 'event', 'run', 'ci', 'api']);
export type RunCause = z.infer<typeof RunCause>;

export const RunClass = z.enum(['interactive', 'background', 'batch']);
export type RunClass = z.infer<typeof RunClass>;

export const RunLifetime = z.enum(['task', 'session']);
export type RunLifetime = z.infer<typeof RunLifetime>;

export const PlacementWhere = z.enum(['inline', 'driver', 'runtime']);
export type PlacementWhere = z.infer<typeof PlacementWhere>;

export const AttachChannel = z.enum(['logs', 'exec', 'terminal', 'screen', 'cdp']);
export type AttachChannel = z.infer<typeof AttachChannel>;

export const RunGroupKind = z.enum(['experiment', 'scorecard', 'conversation', 'batch']);
export type RunGroupKind = z.infer<typeof RunGroupKind>;
