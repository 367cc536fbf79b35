// The in-memory store's state: everything a SQL store keeps in its tables, for one process. Each step
// (load.ts, commit.ts, claim.ts, settle.ts) is a synchronous function of it, so each is atomic on the one JS
// thread — the same unit a SQL store gets from one transaction.
import { type GlobalPolicy, globalPolicy } from '../policy.js';
import { RunIndex } from '../run-index.js';
import type { SessionLoad } from '../session-pool.js';
import { Wfq } from '../wfq.js';
import { RunTable } from './run-table.js';
import type { EnvNode, TenantState } from './tenant.js';

export const NO_SESSIONS: SessionLoad = { total: 0, member: 0 };

export interface MemoryState {
  global: GlobalPolicy;
  readonly tenants: Map<string, TenantState>;
  /** The tenants by number (the run table's tenant column). */
  readonly byNo: TenantState[];
  globalSessions: SessionLoad;
  /** Every admitted run, one row each (runs are never forgotten: getRun and idempotency need them). */
  readonly table: RunTable;
  /** (tenant number, run id) → row. */
  readonly ids: RunIndex;
  queue: Wfq;
  /** The commit's envelope path, reused across commits (drawn-from first, root last). */
  readonly path: EnvNode[];
}

export function memoryState(global: GlobalPolicy = globalPolicy()): MemoryState {
  const table = new RunTable(1024);
  return {
    global,
    tenants: new Map(),
    byNo: [],
    globalSessions: NO_SESSIONS,
    table,
    ids: new RunIndex(table, 1024),
    queue: new Wfq(global.agingMs, table),
    path: [],
  };
}
