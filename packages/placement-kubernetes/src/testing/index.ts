// @everdict/placement-kubernetes/testing — the test Kubernetes API server (for tests; not a feature).
export {
  type RequestRecord,
  startTestApiServer,
  type TestApiServer,
  type TestApiServerOptions,
  TestApiServerOptionsSchema,
} from './api-server.js';
export { EXEC_PROTOCOLS, type ExecProtocol } from './exec-session.js';
export { kubeconfigFor } from './kubeconfig.js';
export { ChildProcessRunner, type ChildProcessRunnerOptions } from './pods/child-process-runner.js';
export type {
  ContainerLaunch,
  ContainerProcess,
  ContainerRunner,
  ExecOptions,
  PodSandbox,
  PodSandboxSpec,
  ProcessExit,
  VolumeMount,
} from './pods/container-runner.js';
export { defaultImageDigest } from './pods/kubelet.js';
export { ProcessDriverRunner, type ProcessDriverRunnerOptions } from './pods/process-driver-runner.js';
export { RESOURCE_TYPES, type ResourceType } from './resources.js';
export type { KubeObject } from './selectors.js';
export type { ApiStatus, StatusCause } from './status.js';
