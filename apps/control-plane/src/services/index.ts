// The application layer's public surface (what the HTTP layer imports). See README.md in this folder.

export {
  ControlPlaneError,
  type ControlPlaneErrorCode,
  ERROR_STATUS,
  isControlPlaneError,
} from '../errors.js';
export type {
  AgentBridgeService,
  AuthService,
  ControlPlaneServices,
  EventFeed,
  GroupService,
  RunService,
  SubscriptionService,
} from './api.js';
export { BOOTSTRAP_TENANT, type BootstrapOutcome } from './bootstrap.js';
export { type Judge, type JudgeScript, type JudgeVerdict, keywordVerdict, scriptedJudge } from './judge.js';
export {
  type Clock,
  type CoreOptions,
  DEFAULT_POLICY,
  type IdGen,
  type SchedulerOptions,
} from './options.js';
export * from './types.js';
