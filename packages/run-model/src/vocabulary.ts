// The closed and open word lists every package speaks. Schemas and types are inferred from these.
import { z } from 'zod';

/** The five executable families; open: a new family is a new string, not a new ledger. */
export const KNOWN_RUN_KINDS = ['eval', 'agent', 'command', 'sandbox', 'analysis'] as const;
export type KnownRunKind = (typeof KNOWN_RUN_KINDS)[number];
/** Any kind string: lower-case, starts with a letter, at most 64 characters. */
export const RunKind = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a run kind is lower-case [a-z0-9_-], ≤ 64');
export type RunKind = KnownRunKind | (string & {});

export function isKnownRunKind(kind: string): kind is KnownRunKind {
  return (KNOWN_RUN_KINDS as readonly string[]).includes(kind);
}

export const RUN_STATUSES = [
  'queued',
  'running',
  'awaiting_input',
  'succeeded',
  'failed',
  'cancelled',
] as const;
export const RunStatus = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof RunStatus>;

export const TERMINAL_STATUSES = ['succeeded', 'failed', 'cancelled'] as const satisfies readonly RunStatus[];
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];
export const ACTIVE_STATUSES = [
  'queued',
  'running',
  'awaiting_input',
] as const satisfies readonly RunStatus[];
export type ActiveStatus = (typeof ACTIVE_STATUSES)[number];

/** Terminal is terminal: a status in this set never changes again. */
export function isTerminalStatus(status: RunStatus): status is TerminalStatus {
  return (TERMINAL_STATUSES as readonly RunStatus[]).includes(status);
}

/** Why a run exists: a member asked, a schedule fired, an event matched, a run caused it, CI, the API. */
export const RunCause = z.enum(['member', 'schedule', 'event', 'run', 'ci', 'api']);
export type RunCause = z.infer<typeof RunCause>;

/** Scheduling class: a person waiting, autonomous work, bulk fan-out. */
export const RunClass = z.enum(['interactive', 'background', 'batch']);
export type RunClass = z.infer<typeof RunClass>;

/** Does the run end by itself (task) or is it held open until closed or expired (session)? */
export const RunLifetime = z.enum(['task', 'session']);
export type RunLifetime = z.infer<typeof RunLifetime>;

/** Whose compute: the control-plane process, a container it owns, or a tenant runtime. */
export const PlacementWhere = z.enum(['inline', 'driver', 'runtime']);
export type PlacementWhere = z.infer<typeof PlacementWhere>;

/** How isolated the compute is: none (in-process), process namespaces, a container, a virtual machine. */
export const PlacementIsolation = z.enum(['none', 'process', 'container', 'vm']);
export type PlacementIsolation = z.infer<typeof PlacementIsolation>;

/** Live channels a run exposes; attaching is not a read (creator-or-admin, single-use tickets). */
export const AttachChannel = z.enum(['logs', 'exec', 'terminal', 'screen', 'cdp']);
export type AttachChannel = z.infer<typeof AttachChannel>;

export const RunGroupKind = z.enum(['experiment', 'scorecard', 'conversation', 'batch']);
export type RunGroupKind = z.infer<typeof RunGroupKind>;

/** A run's role inside its group: an eval case, a conversation turn, any other child of a fan-out. */
export const GroupRole = z.enum(['case', 'turn', 'child']);
export type GroupRole = z.infer<typeof GroupRole>;

/**
 * How far an agent may act without a person: read_only (no mutating tools), ask (every mutating
 * tool call parks the run in awaiting_input), auto_edit (workspace edits pass, the rest park),
 * autonomous (nothing parks; the envelope still bounds it).
 */
export const PermissionMode = z.enum(['read_only', 'ask', 'auto_edit', 'autonomous']);
export type PermissionMode = z.infer<typeof PermissionMode>;
