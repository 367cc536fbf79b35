// Kysely table types of the agent service's ledger side (migrations 0015, 0019): agents, versions, turns, calls.
import type { ColumnType } from 'kysely';
import type { Int8, J, Jsonb, Ts } from './column-types.js';

export interface AgentsTable {
  tenant_id: string;
  id: string;
  name: string;
  version: number;
  enabled: boolean;
  created_by: string;
  created_at: Ts;
  updated_at: Ts;
}

export interface AgentVersionsTable {
  tenant_id: string;
  agent_id: string;
  version: number;
  spec: Jsonb<J>;
  created_by: string;
  created_at: Ts;
}

export interface AgentTurnsTable {
  run_id: string;
  tenant_id: string;
  agent_id: string;
  agent_version: number;
  input_text: string | null;
  parked_at_ms: Int8 | null;
  transcript_bytes: Int8 | null;
  created_at: Ts;
}

export interface AgentCallsTable {
  turn_id: string;
  call_id: string;
  tenant_id: string;
  tool: string;
  caused_run_id: string | null;
  /** The experiment group a `start_experiment` call caused (migration 0019). */
  caused_group_id: ColumnType<string | null, string | null | undefined, string | null>;
  question: string | null;
  resolution: ColumnType<J | null, string | null | undefined, string | null>;
  created_at: Ts;
  resolved_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** Migration 0023: paired agent hosts (agents/hosts.ts) — the keys that sign agent intervals. */
export interface AgentHostsTable {
  id: string;
  tenant_id: string | null;
  name: string;
  public_key: string;
  state: 'active' | 'revoked';
  created_at: Ts;
  revoked_at: Ts | null;
  /** Migration 0034: who revoked it (an API key's id). */
  revoked_by: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Migration 0029: a holder's decline of a parked turn it cannot resume (agents/declines.ts). */
export interface AgentTurnDeclinesTable {
  run_id: string;
  holder: string;
  tenant_id: string;
  epoch: Int8;
  reason: 'manifest_mismatch' | 'snapshot_mismatch';
  message: string | null;
  /** What the decline did: the turn stayed ready for other holders, or none was left and it failed. */
  outcome: 'requeued' | 'failed';
  declined_at: Ts;
  /** Migration 0031: the digest of the capability set the holder declined under (NULL: it declared none). */
  capabilities: ColumnType<string | null, string | null | undefined, string | null>;
}
