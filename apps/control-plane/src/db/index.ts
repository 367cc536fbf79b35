export {
  type Dialect,
  type LedgerDatabase,
  migrateToLatest,
  type OpenDatabaseOptions,
  openDatabase,
} from './database.js';
export { bigintOf, decimal, iso, json, numeric } from './numeric.js';
export type { Database } from './schema.js';
export { type Db, type Executor, isUniqueViolation, type Tx, withTx } from './tx.js';
