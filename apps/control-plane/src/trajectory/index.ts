// The control plane's trajectories: one TrajectoryStore, runs' trajectories (single writer, sealed at the
// end), the seal queue's loop, OTLP import, imported trajectories and their scores, retention.
export { fromStoreError, mapStoreErrors } from './errors.js';
export { type SealPass, type TrajectoryJobOptions, TrajectoryJobs } from './jobs.js';
export { RunLocks } from './run-lock.js';
export { RunTrajectories, type RunTrajectoryHead } from './run-trajectories.js';
export { type OpenTrajectoryStoreOptions, openTrajectoryStore } from './store.js';
