// @everdict/witness — an independent witness of Everdict head logs (issue 18 §3).
export { parseConfig, readWitnessKey, type WitnessConfig } from './config.js';
export { WITNESS_ERROR_CODES, WitnessError, type WitnessErrorCode } from './errors.js';
export { LogClient, MAX_ANSWER_BYTES } from './log-client.js';
export { WitnessMetrics } from './metrics.js';
export { EXIT_FORK, type MetricsServer, type RunResult, runWitness, startMetricsServer } from './run.js';
export {
  emptyState,
  foldLogs,
  loadState,
  nodeStateDisk,
  normalizeLogUrl,
  type StateDisk,
  saveState,
  type WitnessState,
  witnessStateSchema,
} from './state.js';
export { type LogTarget, type PollOutcome, Witness, type WitnessOptions } from './witness.js';
