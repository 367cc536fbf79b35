// Kysely table types of the admission store (`adm_*`, admission-store/sql/): the gate's global and tenant rows,
// envelopes and their released stripes, admissions, slots, the queue and the WFQ state.
import type { ColumnType } from 'kysely';
import type { GenInt8, Int8, J, Jsonb } from './column-types.js';
import type { DbNumeric } from './numeric.js';

export interface AdmGlobalTable {
  id: number;
  policy: Jsonb<J>;
  sessions: number;
  member_sessions: number;
}

export interface AdmTenantsTable {
  tenant: string;
  policy: Jsonb<J>;
  weight: number;
  max_queued: number;
  max_concurrent: number;
  queued: number;
  queued_interactive: number;
  queued_background: number;
  queued_batch: number;
  running: number;
  sessions: number;
  member_sessions: number;
  /** Aged service (admission's wfq.ts): tags finishTag(aged_start, aged_n + j, weight). */
  aged_start: ColumnType<number, number | undefined, number>;
  aged_n: ColumnType<DbNumeric, DbNumeric | undefined, DbNumeric>;
  /** Epoch ms of its last promotion or aged service; null once blocked. */
  aged_at: ColumnType<DbNumeric | null, DbNumeric | null | undefined, DbNumeric | null>;
}

export interface AdmAgentsTable {
  tenant: string;
  agent_id: string;
  enabled: boolean;
}

export interface AdmEnvelopesTable {
  id: string;
  tenant: string;
  parent_id: string | null;
  cap_usd: number | null;
  cap_tokens: number | null;
  cap_runs: number | null;
  spent_usd: number;
  spent_tokens: number;
  spent_runs: number;
  in_flight: number;
  in_flight_cap: number;
}

export interface AdmEnvelopeReleasesTable {
  tenant: string;
  id: string;
  stripe: number;
  in_flight: number;
  spent_usd: number;
  spent_tokens: number;
}

export interface AdmTenantReleasesTable {
  tenant: string;
  stripe: number;
  running: number;
}

export interface AdmAdmissionsTable {
  tenant: string;
  request_id: string;
  run_id: string;
  decision: Jsonb<J>;
}

export interface AdmSlotsTable {
  run_id: string;
  tenant: string;
  kind: string;
  cause: string;
  class: string;
  lifetime: string;
  status: string;
  caused_by_run_id: string | null;
  depth: number;
  children: number;
  envelope_id: string;
  member: boolean;
  agent_id: string | null;
  expected_duration_ms: Int8 | null;
  admitted_at: Int8;
  started_at: Int8 | null;
}

/** A running slot's expected end (migration 0022): kept by a trigger on adm_slots, only for slots with a duration. */
export interface AdmSlotEndsTable {
  tenant: string;
  run_id: string;
  lifetime: string;
  end_ms: Int8;
}

export interface AdmQueueTable {
  run_id: string;
  tenant: string;
  class: string;
  lane: number;
  finish: number;
  seq: GenInt8;
  enqueued_at: Int8;
  /** The run's kind (0004; null only for entries enqueued before it). */
  kind: string | null;
}

export interface AdmWfqTable {
  tenant: string;
  lane: number;
  /** The lane's last finish tag is finishTag(start_v, n, weight). */
  start_v: number;
  n: Int8;
}

export interface AdmVtimeTable {
  lane: number;
  v: number;
}
