// The ledger + application layer of the control plane (what app.ts / main.ts compose).

export { PgAdmissionStore } from './admission-store/index.js';
export { buildApp } from './app.js';
export { type Core, startCore } from './core.js';
export { type LedgerDatabase, openDatabase } from './db/database.js';
export * from './services/index.js';
export { openTrajectoryStore } from './trajectory/store.js';
