export { PgAdmissionLanes } from './lanes.js';
export { envelopePath, PgAdmissionStore } from './pg-admission-store.js';
