import type { ColumnType } from 'kysely';
import type { Int8, J, Jsonb, Ts } from './column-types.js';

export interface RunnersTable {
  id: string;
  /** null: a shared runner (paired through the service token). */
  tenant_id: string | null;
  name: string;
  public_key: string;
  credential_hash: string;
  capabilities: Jsonb<J>;
  state: 'active' | 'draining' | 'revoked';
  created_at: Ts;
  last_heartbeat_at: Ts | null;
  revoked_at: Ts | null;
  /** Migration 0034: who drained it (an API key's id, or `operator`) and when; who revoked it. */
  drained_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  drained_by: ColumnType<string | null, string | null | undefined, string | null>;
  revoked_by: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface RunnerPairingTokensTable {
  token_hash: string;
  tenant_id: string | null;
  name: string;
  created_by: string;
  created_at: Ts;
  expires_at: Ts;
  used_at: Ts | null;
  runner_id: string | null;
}

export interface RunnerImagesTable {
  runner_id: string;
  tenant_id: string | null;
  kind: string;
  image: string;
}

/** Where an interval's journal sits in the run's trajectory (migration 0012): first seq, events appended. */
export interface RunnerJournalsTable {
  run_id: string;
  epoch: number;
  seq_from: number;
  event_count: number;
}

export interface RunnerArtifactsTable {
  run_id: string;
  epoch: number;
  path: string;
  address: string;
  size: Int8;
}

export interface HarnessesTable {
  tenant_id: string;
  id: string;
  version: string;
  image: string;
  command: Jsonb<string[]>;
  created_by: string;
  created_at: Ts;
}
