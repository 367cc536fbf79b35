// The Kubernetes driver's configuration (zod at the boundary). The cluster comes from client-node's own
// loaders: in a pod, the service account (loadFromCluster); elsewhere KUBECONFIG or ~/.kube/config
// (loadFromDefault does both) — or a KubeConfig the caller built.
import { randomBytes } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';

/** An API request as `requestTimeoutFor` sees it. */
export interface ApiRequest {
  method: string;
  url: URL;
}

export const KubernetesDriverConfig = z.object({
  /** The cluster and credentials (default: `KubeConfig.loadFromDefault()`: KUBECONFIG, ~/.kube/config, or in-cluster). */
  kubeConfig: z.custom<KubeConfig>((v) => v instanceof KubeConfig, 'a KubeConfig').optional(),
  /** The tenant's namespace: one for all tenants, or a function of the tenant (default: the context's namespace). */
  namespace: z
    .union([
      z.string().min(1),
      z.custom<(tenant: string) => string>((v) => typeof v === 'function', 'a function'),
    ])
    .optional(),
  /** Namespaces whose ResourceQuotas capacity() reports (default: the namespace, when it is one string). */
  capacityNamespaces: z.array(z.string().min(1)).optional(),
  /** The container image that `image: "default"` provisions. */
  defaultImage: z.string().min(1).default('busybox:1.36'),
  /** The cap on live sandboxes when no ResourceQuota constrains sandbox pods. */
  maxSandboxes: z.int().positive().default(16),
  /** The non-root user (and group, fsGroup) sandbox containers run as. */
  runAsUser: z.int().positive().default(65532),
  terminationGracePeriodSeconds: z.int().nonnegative().default(5),
  /** How long dispose waits for a graceful delete before deleting with grace 0 (forced). */
  forceDeleteAfterMs: z
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .optional(),
  /** How long provision waits for the pod to run. */
  startTimeoutMs: z
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .default(120_000),
  /**
   * The deadline of every API request (create, delete, list, lease, the exec WebSocket handshake): a
   * cluster that accepts a connection and never answers fails the call instead of holding it forever.
   */
  requestTimeoutMs: z
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .default(30_000),
  /**
   * A deadline for particular API requests instead of `requestTimeoutMs`: called with each request's
   * method and URL, its number (ms) is that request's deadline; `undefined` keeps `requestTimeoutMs`.
   * Default: none (every request has `requestTimeoutMs`). The fault tests use it to give only the request
   * they hang a short deadline.
   */
  requestTimeoutFor: z
    .custom<(request: ApiRequest) => number | undefined>((v) => typeof v === 'function', 'a function')
    .optional(),
  /**
   * How long an exec that ended killed (137) or without a status waits on the watch for the pod status to
   * say why (OOMKilled, evicted, deleted): a kubelet reports a container's end about a second after the
   * execs in it saw it. A command that ends 137 with its container still running costs this wait.
   */
  statusSettleMs: z
    .int()
    .nonnegative()
    .max(2 ** 31 - 1)
    .default(3000),
  /**
   * How long the pod watch may stay silent (no event, no bookmark) before it is cut and resumed from the
   * last resourceVersion (410 → re-list): a stream behind a hung proxy would otherwise hide every phase
   * change. Well above the apiserver's periodic bookmarks to a watch that allows them.
   */
  watchIdleTimeoutMs: z
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .default(150_000),
  /**
   * The deadline of each of the driver's own execs (snapshot, restore, directories, the kill of a stopped
   * command), from the handshake to the final status: a node that accepts the exec and never answers fails
   * the operation (`spawn_failed`, `detail.reason: "internal_exec_timeout"`) instead of holding it forever.
   */
  internalExecTimeoutMs: z
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .default(300_000),
  /** This instance's owner lease: renewed every third of it; pods of a lapsed owner are reapable. */
  leaseDurationSeconds: z.int().positive().default(30),
  /** Names this driver instance (pod owner label, lease name); default random. */
  instanceId: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/)
    .optional(),
  /** Whether the cluster's runtime gives exec a terminal (real clusters do). */
  pty: z.boolean().default(true),
  /** Enforce `network: "none"` with a deny-all NetworkPolicy selecting such pods (created on demand). */
  networkPolicy: z.boolean().default(true),
  /** The runner or cluster name placed in describe().placement.target. */
  target: z.string().min(1).optional(),
  /** The largest workspace snapshot taken. */
  snapshotMaxBytes: z
    .int()
    .positive()
    .default(512 * 1024 * 1024),
  /**
   * Each sandbox's disk (ProvisionSpec limits carry no disk limit): the `sizeLimit` of the workspace emptyDir
   * and the container's ephemeral-storage request = limit, which bounds everything the pod writes (workspace,
   * /tmp, the control files and log). Past either the kubelet evicts the pod. Default: twice `snapshotMaxBytes`
   * (1 GiB at the defaults) — a workspace as large as the largest snapshot, and as much again besides.
   */
  diskBytes: z.int().positive().optional(),
});
export type KubernetesDriverConfigInput = z.input<typeof KubernetesDriverConfig>;

export interface ResolvedConfig
  extends Omit<z.output<typeof KubernetesDriverConfig>, 'kubeConfig' | 'namespace' | 'instanceId'> {
  kubeConfig: KubeConfig;
  namespaceFor: (tenant: string) => string;
  capacityNamespaces: string[];
  instanceId: string;
  forceDeleteAfterMs: number;
  diskBytes: number;
}

export function resolveConfig(input: KubernetesDriverConfigInput): ResolvedConfig {
  const config = KubernetesDriverConfig.parse(input);
  const kubeConfig = config.kubeConfig ?? loadKubeConfig();
  const contextNamespace =
    kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? 'default';
  const namespace = config.namespace ?? contextNamespace;
  const namespaceFor = typeof namespace === 'string' ? () => namespace : namespace;
  return {
    ...config,
    kubeConfig,
    namespaceFor,
    capacityNamespaces: config.capacityNamespaces ?? (typeof namespace === 'string' ? [namespace] : []),
    instanceId: config.instanceId ?? randomBytes(6).toString('hex'),
    forceDeleteAfterMs: config.forceDeleteAfterMs ?? (config.terminationGracePeriodSeconds + 5) * 1000,
    diskBytes: config.diskBytes ?? 2 * config.snapshotMaxBytes,
  };
}

/** client-node's default loading: KUBECONFIG / ~/.kube/config, or the in-cluster service account. */
export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
