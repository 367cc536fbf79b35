// @everdict/placement-kubernetes — the Kubernetes rung of the placement ladder. The test API server it is
// verified against is '@everdict/placement-kubernetes/testing'.
export { KubernetesDriver } from './kubernetes-driver.js';
export {
  type ApiRequest,
  KubernetesDriverConfig,
  type KubernetesDriverConfigInput,
  loadKubeConfig,
} from './kubernetes-driver-config.js';
export {
  KIND_KEY,
  MANAGED_BY_KEY,
  MANAGED_BY_VALUE,
  NETWORK_KEY,
  OWNER_KEY,
  RUN_KEY,
  TENANT_KEY,
} from './labels.js';
export { NETWORK_POLICY } from './network-policy.js';
export { CONTROL_PATH, DRIVER_NAME, WORKSPACE_PATH } from './pod-manifest.js';
export { MANAGED_BY, PodWatch, type PodWatchStats } from './pod-watch.js';
export * from './quantity.js';
