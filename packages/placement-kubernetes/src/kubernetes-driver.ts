// The Kubernetes rung of the placement ladder: a Pod per sandbox in the tenant's namespace, driven through
// @kubernetes/client-node — phases from a watch (never polled), commands over the exec WebSocket
// (v5, falling back to v4), the log from pods/log, capacity from the namespace's ResourceQuota, delete with
// grace and a forced fallback, orphans reaped by label once their owner's lease has lapsed.
import {
  type Capacity,
  type Command,
  type Driver,
  type DriverDescription,
  ExecOptions,
  type ExecOptionsInput,
  type ExecResult,
  type ExecStream,
  filesOfArchive,
  LabelSelector,
  LogOptions,
  type LogOptionsInput,
  PlacementError,
  type ProvisionSpec,
  type ProvisionSpecInput,
  parseCommand,
  parseHandle,
  parseProvisionSpec,
  type ReapedSandbox,
  type SandboxHandle,
  type SandboxUsage,
  type Snapshot,
  StreamOptions,
  type StreamOptionsInput,
  sandboxId,
  unsupported,
  WorkspaceDir,
  type WorkspaceFile,
} from '@everdict/placement';
import { CoordinationV1Api, CoreV1Api, NetworkingV1Api, type V1Pod } from '@kubernetes/client-node';
import { apiClient, apiFailure } from './api-clients.js';
import { describeKubernetesDriver } from './description.js';
import type { ChannelProtocol } from './exec-channel.js';
import {
  type KubernetesDriverConfigInput,
  type ResolvedConfig,
  resolveConfig,
} from './kubernetes-driver-config.js';
import { labelsOf, labelValue, OWNER_KEY, selectorFor } from './labels.js';
import { NamespaceCapacity } from './namespace-capacity.js';
import { ensureNetworkPolicy } from './network-policy.js';
import { OwnerLeases } from './owner-lease.js';
import { AbandonedPods, createPod, InFlight } from './pod-create.js';
import { deletePod } from './pod-delete.js';
import {
  DRIVER_NAME,
  handleOf,
  podProblem,
  podState,
  sandboxFailure,
  sandboxPod,
  unschedulableReason,
} from './pod-manifest.js';
import { PodWatch } from './pod-watch.js';
import { runCommand, type SandboxTarget, startStream, streamInternal } from './sandbox-exec.js';
import { sandboxLogs } from './sandbox-logs.js';
import { filesCommand } from './sandbox-scripts.js';
import { makeDirectories, restoreWorkspace, snapshotWorkspace } from './workspace.js';

export class KubernetesDriver implements Driver {
  readonly config: ResolvedConfig;
  private readonly core: CoreV1Api;
  private readonly networking: NetworkingV1Api;
  private readonly leases: OwnerLeases;
  private readonly namespaceCapacity: NamespaceCapacity;
  private readonly watches = new Map<string, PodWatch>();
  /** Sandboxes this instance provisioned and has not disposed: never reaped by it. */
  private readonly held = new Map<string, SandboxHandle>();
  /** Sandboxes being provisioned now: their pods are not orphans yet. */
  private readonly provisioning = new InFlight();
  private readonly abandoned = new AbandonedPods();
  private protocol: ChannelProtocol | undefined;

  constructor(input: KubernetesDriverConfigInput = {}) {
    this.config = resolveConfig(input);
    const kc = this.config.kubeConfig;
    const { requestTimeoutMs: timeout, requestTimeoutFor: timeoutFor } = this.config;
    this.core = apiClient(kc, CoreV1Api, timeout, timeoutFor);
    this.networking = apiClient(kc, NetworkingV1Api, timeout, timeoutFor);
    this.leases = new OwnerLeases(
      apiClient(kc, CoordinationV1Api, timeout, timeoutFor),
      this.config.instanceId,
      this.config.leaseDurationSeconds,
    );
    this.namespaceCapacity = new NamespaceCapacity(
      this.core,
      (namespace) => this.podsIn(namespace),
      this.config.maxSandboxes,
      this.config.diskBytes,
    );
  }

  describe(): DriverDescription {
    return describeKubernetesDriver(this.config);
  }

  /** The watch of a namespace's everdict pods (started on first use; restarted if its first list failed). */
  async podsIn(namespace: string): Promise<PodWatch> {
    let watch = this.watches.get(namespace);
    if (!watch) {
      watch = new PodWatch(this.config.kubeConfig, this.core, namespace, undefined, undefined, {
        idleTimeoutMs: this.config.watchIdleTimeoutMs,
      });
      this.watches.set(namespace, watch);
    }
    try {
      await watch.synced();
    } catch (error) {
      watch.close();
      this.watches.delete(namespace);
      throw new PlacementError(
        'spawn_failed',
        `cannot list pods in ${namespace}: ${(error as Error).message}`,
        { namespace },
      );
    }
    return watch;
  }

  async provision(input: ProvisionSpecInput): Promise<SandboxHandle> {
    const spec = parseProvisionSpec(input);
    if (spec.limits.cpuTimeMs !== undefined)
      throw unsupported(DRIVER_NAME, 'a CPU-time limit (Kubernetes limits CPU rate, not total)');
    const id = sandboxId('everdict', spec.labels);
    // while it is provisioned, a pod of this instance that it does not hold yet is not an orphan to reap
    return this.provisioning.during(id, () => this.provisionPod(spec, id));
  }

  private async provisionPod(spec: ProvisionSpec, id: string): Promise<SandboxHandle> {
    const namespace = this.config.namespaceFor(spec.labels.tenant);
    const pods = await this.podsIn(namespace);
    const existing = pods.get(id);
    const dying = existing?.metadata?.deletionTimestamp !== undefined || this.abandoned.has(existing);
    if (existing && !dying) return this.started(pods, id);
    if (existing) {
      await pods
        .waitFor(id, (p) => p === undefined, this.config.forceDeleteAfterMs * 2)
        .catch(() => {
          throw new PlacementError('spawn_failed', `the previous pod ${id} is still being deleted`, {
            pod: id,
          });
        });
    }
    // the slots of the namespace the pod goes to (not the sum over capacityNamespaces, which may not
    // include it: with a namespace per tenant and no capacityNamespaces that sum is 0 and nothing ran)
    const slots = await this.namespaceCapacity.slotsIn(namespace);
    if (slots.free <= 0)
      throw new PlacementError('capacity', `no sandbox slot is free in ${namespace}`, {
        namespace,
        slotsTotal: slots.total,
        slotsFree: slots.free,
      });
    if (spec.network === 'none' && this.config.networkPolicy)
      await ensureNetworkPolicy(this.networking, namespace);
    await this.leases.hold(namespace).catch((error: unknown) => {
      throw new PlacementError('spawn_failed', `cannot hold the owner lease: ${(error as Error).message}`, {
        namespace,
      });
    });
    const containerImage = spec.image === 'default' ? this.config.defaultImage : spec.image;
    const body = sandboxPod(
      id,
      spec,
      {
        namespace,
        containerImage,
        owner: this.config.instanceId,
        runAsUser: this.config.runAsUser,
        terminationGracePeriodSeconds: this.config.terminationGracePeriodSeconds,
        diskBytes: this.config.diskBytes,
      },
      Date.now(),
    );
    const owner = this.config.instanceId;
    const created = await createPod(this.core, body, owner, () => pods.get(id), this.abandoned);
    if (created === 'exists') return this.started(pods, id);
    const handle = await this.started(pods, id, created.uid);
    if (spec.workspace || spec.directories.length > 0) {
      try {
        const target = this.target(handle, namespace);
        if (spec.workspace) await restoreWorkspace(target, spec.workspace);
        // After the seeding snapshot (whose restore empties the workspace first), before any command: one
        // exec. A pod's own command can not do it: a container counts as running before its first line
        // ran, so an exec could come first; an init container would cost a container start instead.
        if (spec.directories.length > 0) await makeDirectories(target, spec.directories);
      } catch (error) {
        // the seeding failure is the answer; a dispose that fails too leaves the pod for reap
        await this.dispose(handle).catch(() => this.held.delete(handle.id));
        throw error;
      }
    }
    return handle;
  }

  /** Wait until the pod runs and return its handle; a pod that cannot start is removed and refused. */
  private async started(pods: PodWatch, id: string, uid?: string): Promise<SandboxHandle> {
    // the pod this provision made (or adopts), not one abandoned before whose deletion the watch has not shown
    const ours = (p: V1Pod | undefined) =>
      p !== undefined && (uid === undefined ? !this.abandoned.has(p) : p.metadata?.uid === uid);
    let pod: V1Pod | undefined;
    try {
      // the create's own ADDED event may not have arrived yet: wait for the pod itself
      pod = await pods.waitFor(id, (p) => ours(p) && podState(p) !== 'pending', this.config.startTimeoutMs);
    } catch {
      pod = ours(pods.get(id)) ? pods.get(id) : undefined;
    }
    const state = podState(pod);
    const handle = pod ? handleOf(pod) : undefined;
    if (state === 'running' && handle) {
      this.held.set(handle.id, handle);
      return handle;
    }
    const why = podProblem(pod);
    const unplaced = unschedulableReason(pod) !== undefined;
    // a delete that fails leaves the pod an orphan of this instance (neither held nor provisioning once
    // this provision returns), which the next reap removes; the refusal still says why the pod did not run
    const cleanup = pod ? await this.removeRefused(pods, id) : 'not_found';
    const detail = { pod: id, cleanup };
    if (state === 'image_not_found') throw new PlacementError('image_not_found', why, detail);
    // still Pending because no node has room (and no autoscaler made some in startTimeoutMs): capacity
    if (state === 'pending' && unplaced) {
      throw new PlacementError('capacity', `no node has room for the sandbox pod: ${why}`, detail);
    }
    throw new PlacementError('spawn_failed', `the sandbox pod did not start: ${why}`, { ...detail, state });
  }

  /** Delete (grace 0) a pod provision refuses: `deleted`, or `left_for_reap` when the delete failed. */
  private async removeRefused(pods: PodWatch, id: string): Promise<'deleted' | 'left_for_reap'> {
    try {
      await this.deletePod(pods, id, 0);
      return 'deleted';
    } catch {
      return 'left_for_reap';
    }
  }

  /** A live sandbox's pod and how to run commands in it; `gone` when it no longer exists. */
  private async live(input: SandboxHandle): Promise<SandboxTarget> {
    const handle = parseHandle(input);
    const namespace = this.config.namespaceFor(handle.labels.tenant);
    const pods = await this.podsIn(namespace);
    const pod = pods.get(handle.id);
    const labels = labelsOf(pod?.metadata?.annotations);
    if (!pod || pod.metadata?.deletionTimestamp || !labels || labels.runId !== handle.labels.runId) {
      throw new PlacementError('gone', `sandbox ${handle.id} no longer exists`, { id: handle.id });
    }
    const target = this.target(handle, namespace);
    const failure = target.failure();
    if (failure) throw failure;
    return target;
  }

  private target(handle: SandboxHandle, namespace: string): SandboxTarget {
    return {
      kc: this.config.kubeConfig,
      namespace,
      pod: handle.id,
      handle,
      requestTimeoutMs: this.config.requestTimeoutMs,
      internalExecTimeoutMs: this.config.internalExecTimeoutMs,
      protocol: this.protocol,
      learned: (p) => {
        this.protocol = p;
      },
      failure: () => sandboxFailure(handle, this.watches.get(namespace)?.get(handle.id)),
      settled: async () => {
        const ended = (p: V1Pod | undefined) =>
          !p || p.metadata?.deletionTimestamp !== undefined || sandboxFailure(handle, p) !== undefined;
        await this.watches
          .get(namespace)
          ?.waitFor(handle.id, ended, this.config.statusSettleMs)
          .catch(() => undefined);
      },
    };
  }

  async exec(handle: SandboxHandle, cmd: Command, options: ExecOptionsInput = {}): Promise<ExecResult> {
    const argv = parseCommand(cmd);
    const opts = ExecOptions.parse(options);
    return runCommand(await this.live(handle), argv, opts);
  }

  async stream(handle: SandboxHandle, cmd: Command, options: StreamOptionsInput = {}): Promise<ExecStream> {
    const argv = parseCommand(cmd);
    const opts = StreamOptions.parse(options);
    if (opts.tty && !this.config.pty) throw unsupported(DRIVER_NAME, 'a terminal (pty) on this cluster');
    return startStream(await this.live(handle), argv, opts, this.config.pty);
  }

  logs(handle: SandboxHandle, options: LogOptionsInput = {}): AsyncIterable<Uint8Array> {
    const opts = LogOptions.parse(options);
    return sandboxLogs(() => this.live(handle), opts);
  }

  async snapshot(handle: SandboxHandle): Promise<Snapshot> {
    return snapshotWorkspace(await this.live(handle), this.config.snapshotMaxBytes);
  }

  async *files(handle: SandboxHandle, dir: string): AsyncGenerator<WorkspaceFile> {
    const path = WorkspaceDir.parse(dir);
    yield* filesOfArchive(await streamInternal(await this.live(handle), filesCommand(path)));
  }

  async restore(handle: SandboxHandle, snapshot: Snapshot): Promise<void> {
    await restoreWorkspace(await this.live(handle), snapshot);
  }

  async usage(input: SandboxHandle): Promise<SandboxUsage> {
    const target = await this.live(input);
    // The API reports no per-pod CPU time or peak memory without a metrics pipeline: null, never estimated.
    return {
      cpuTimeMs: null,
      peakMemoryBytes: null,
      wallTimeMs: Math.max(0, Date.now() - target.handle.createdAtMs),
      mechanism: 'kubernetes',
    };
  }

  async dispose(input: SandboxHandle): Promise<void> {
    const handle = parseHandle(input);
    const namespace = this.config.namespaceFor(handle.labels.tenant);
    const pods = await this.podsIn(namespace);
    const pod = pods.get(handle.id);
    if (pod && labelsOf(pod.metadata?.annotations)?.runId === handle.labels.runId) {
      await this.deletePod(pods, handle.id, this.config.terminationGracePeriodSeconds).catch(
        (error: unknown) => {
          throw apiFailure(`sandbox ${handle.id} could not be deleted`, error, { id: handle.id, namespace });
        },
      );
    }
    this.held.delete(handle.id);
  }

  /** Delete with grace; if the pod is still there after `forceDeleteAfterMs`, delete it with grace 0. */
  deletePod(pods: PodWatch, name: string, graceSeconds: number): Promise<'graceful' | 'forced'> {
    return deletePod(this.core, pods, name, graceSeconds, this.config);
  }

  async reap(selector: { labels: LabelSelector }): Promise<ReapedSandbox[]> {
    const labels = LabelSelector.parse(selector.labels);
    const namespaces =
      labels.tenant !== undefined
        ? [this.config.namespaceFor(labels.tenant)]
        : this.config.capacityNamespaces;
    const reaped: ReapedSandbox[] = [];
    for (const namespace of new Set(namespaces)) {
      const list = await this.core
        .listNamespacedPod({ namespace, labelSelector: selectorFor(labels) })
        .catch((error: unknown) => {
          throw apiFailure(`cannot list pods in ${namespace}`, error, { namespace });
        });
      const pods = await this.podsIn(namespace);
      for (const pod of list.items) {
        const name = pod.metadata?.name ?? '';
        const podLabels = labelsOf(pod.metadata?.annotations);
        if (!podLabels || this.held.has(name) || this.provisioning.has(name)) continue;
        // this instance's own pod that it neither holds nor provisions is an orphan (a create that got no
        // answer and whose clean-up failed or came first): reapable though this instance's lease is live
        const owner = pod.metadata?.labels?.[OWNER_KEY];
        const orphan = owner === labelValue(this.config.instanceId);
        try {
          if (!orphan && (await this.leases.isLive(namespace, owner))) continue;
          await this.deletePod(pods, name, this.config.terminationGracePeriodSeconds);
        } catch (error) {
          throw apiFailure(`sandbox ${name} could not be reaped`, error, { id: name, namespace });
        }
        reaped.push({ id: name, labels: podLabels, removed: ['pod'] });
      }
    }
    return reaped;
  }

  capacity(): Promise<Capacity> {
    return this.namespaceCapacity.of(this.config.capacityNamespaces);
  }

  /** Stop watching and give up the owner leases. Sandboxes stay (dispose them first, or reap them later). */
  async close(): Promise<void> {
    for (const watch of this.watches.values()) watch.close();
    this.watches.clear();
    await this.leases.release();
  }
}
