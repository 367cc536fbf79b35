// everdict-runner — the runner daemon: pairs with a control plane, leases runs, executes them through a
// placement driver, streams their trajectory, signs each interval. The core is behind the RunnerApi port.
export { type DaemonOptions, LEASES_PER_SLOT, leaseBound, RunnerDaemon } from './daemon.js';
export {
  DEFAULT_WATTS_PER_CORE,
  type EnergyFigure,
  EnergyMeter,
  estimateUj,
  raplSince,
  readRapl,
} from './energy.js';
export { RUNNER_ERROR_CODES, RunnerError, type RunnerErrorCode } from './errors.js';
export { HttpRunnerApi, pairRunner } from './http-api.js';
export { executeInterval, type IntervalDeps, type IntervalEnd } from './interval.js';
export { Journal, type JournalOptions } from './journal.js';
export { MAX_LINE_BYTES, pumpOutput, TAIL_BYTES, Tail } from './output.js';
export type { RunnerApi } from './port.js';
export * from './protocol.js';
export { SessionAgent, type SessionAgentOptions } from './sessions/agent.js';
export {
  defaultStateDir,
  KEY_FILE,
  loadOrCreateKey,
  loadPairedKey,
  loadPairing,
  newKey,
  PAIRING_FILE,
  Pairing,
  savePairedIdentity,
  savePairing,
} from './state.js';
export { REQUEST_TIMEOUT_MS, withRequestTimeout } from './timed-api.js';
export { type OutUploads, SMALL_ARTIFACT_BYTES, UPLOADS_IN_FLIGHT, uploadOut } from './workspace-files.js';
