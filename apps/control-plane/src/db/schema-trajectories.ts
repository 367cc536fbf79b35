// Kysely table types of the trajectory store's ledger side (migration 0009): seal queue, retention policy, deletions, scores.
import type { ColumnType } from 'kysely';
import type { GenInt8, J, Jsonb, Ts } from './column-types.js';

export interface TrajectorySealQueueTable {
  run_id: string;
  tenant_id: string;
  enqueued_at: ColumnType<Date, Date | string | undefined, Date | string>;
  not_before: ColumnType<Date, Date | string | undefined, Date | string>;
  attempts: ColumnType<number, number | undefined, number>;
  last_error: string | null;
}

export interface TrajectoryPoliciesTable {
  tenant_id: string;
  retention_days: number | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface TrajectoryDeletionsTable {
  id: GenInt8;
  tenant_id: string;
  trajectory_id: string;
  digest: string;
  sealed_at: Ts;
  deleted_at: Ts;
  reason: string;
  record: Jsonb<J>;
}

export interface TrajectoryScoresTable {
  id: string;
  tenant_id: string;
  trajectory_id: string;
  grader: string;
  grader_type: string;
  value: number;
  passed: boolean | null;
  detail: Jsonb<unknown>;
  digest: string;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}
