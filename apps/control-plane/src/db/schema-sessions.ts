// Table types of the sessions module (migration 0014).
import type { ColumnType } from 'kysely';
import type { J, Jsonb, Ts } from './column-types.js';
import type { DbNumeric } from './numeric.js';

export interface SessionsTable {
  tenant_id: string;
  run_id: string;
  created_by: string;
  image: string;
  state: 'open' | 'parked';
  idle_timeout_sec: number;
  opened_at: Ts;
  expires_at: Ts;
  idle_deadline: Ts;
  last_activity_at: Ts;
  /** Who holds the compute: `embedded:<driver>` (this deployment's control plane) or `runner:<id>`. */
  holder: string;
  /** The driver's SandboxHandle (plain JSON); null while parked. */
  handle: Jsonb<J> | null;
  /** While parked: the image park (snapshot address, object key, manifest, bytes). */
  park: Jsonb<J> | null;
  parked_at: Ts | null;
  trajectory_bytes: ColumnType<DbNumeric, DbNumeric | undefined, DbNumeric>;
  trajectory_truncated: ColumnType<boolean, boolean | undefined, boolean>;
}

/** A command running in a session's compute (exec), migration 0032: counts until its timeout (`until`). */
export interface SessionExecsTable {
  tenant_id: string;
  run_id: string;
  exec_id: string;
  until: Ts;
}

export interface TerminalTicketsTable {
  ticket_hash: string;
  tenant_id: string;
  run_id: string;
  actor: string;
  created_at: Ts;
  expires_at: Ts;
  redeemed_at: Ts | null;
}

/** A runner's session channel (migration 0018): who holds it and when it was last seen open. */
export interface SessionChannelsTable {
  runner_id: string;
  replica: string;
  driver: string;
  images: Jsonb<J>;
  slots: number;
  connected_at: Ts;
  seen_at: Ts;
}
