// The admission stores of the control plane, one folder per implementation with the same file roles (as
// Kysely's dialects): `sql/` (PostgreSQL and PGlite) — store.ts (the AdmissionStore), load.ts, commit.ts +
// commit-batch.ts, causal-tree.ts (a caused run's commit re-checks its tree), claim.ts, settle.ts, rows.ts,
// contract.test.ts. The in-memory store is admission's own
// (`@everdict/admission` `MemoryAdmissionStore`), under the same contract (`@everdict/admission/contract`).
export { PgAdmissionLanes } from './sql/lanes.js';
export { envelopePath, PgAdmissionStore } from './sql/store.js';
