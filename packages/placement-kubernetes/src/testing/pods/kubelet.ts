// The test server's node: it schedules every created pod onto itself, "pulls" images, starts containers
// through a ContainerRunner, reports phases (Pending → Running → Succeeded/Failed) and container states
// through the object store (so watchers see each transition), restarts per restartPolicy, enforces
// activeDeadlineSeconds, and deletes gracefully (SIGTERM, SIGKILL after the grace period) or at once.
import { createHash, randomBytes } from 'node:crypto';
import type { ObjectStore } from '../object-store.js';
import { findType, type ResourceType } from '../resources.js';
import type { KubeObject } from '../selectors.js';
import { errors } from '../status.js';
import type { ContainerProcess, ContainerRunner, ExecOptions, PodSandbox } from './container-runner.js';
import { LogBuffer } from './log-buffer.js';
import { podNetwork } from './network-policy.js';
import {
  applyStatus,
  type ContainerRuntime,
  newPodRuntime,
  type PodRuntime,
  phaseOf,
  podTimer,
} from './pod-runtime.js';
import {
  imageRepository,
  launchOf,
  normalizeImage,
  podSpec,
  runAsRootRefusal,
  sandboxSpecOf,
} from './pod-spec.js';
import { conditions, containerStatus, now } from './pod-status.js';
import { type Allocatable, unschedulable, unschedulableCondition } from './scheduler.js';

const PODS = findType('', 'v1', 'pods') as ResourceType;

export interface KubeletOptions {
  nodeName: string;
  runner: ContainerRunner;
  /** The registry digest (`sha256:<hex>`) reported for an image reference. */
  imageDigest(reference: string): string;
  /** Whether an image reference can be pulled (otherwise ErrImagePull / ImagePullBackOff). */
  pullable(reference: string): boolean;
  restartBackoffMs: number;
  /** The process run for a container with neither command nor args (the image entrypoint is unknown). */
  defaultEntrypoint: string[];
  onPodChange(namespace: string): void;
  /** The node's allocatable CPU and memory (quantities); a pod whose requests do not fit stays Pending. */
  allocatable: Allocatable;
}

/** A deterministic digest for an image reference: the same reference reports the same imageID. */
export function defaultImageDigest(reference: string): string {
  return `sha256:${createHash('sha256').update(normalizeImage(reference)).digest('hex')}`;
}

export class Kubelet {
  private readonly pods = new Map<string, PodRuntime>();
  private ipCounter = 1;
  /** Fault injection: the node stops finishing graceful deletions (pods stay Terminating until forced). */
  stalled = false;
  /**
   * How long after a container exits its status reaches the API (a real kubelet's PLEG relist and status
   * sync take about a second): execs in it have ended by then.
   */
  statusLagMs = 0;
  /** How long container output (and the log's end) takes to reach pods/log, as a node's log pipeline. */
  logLagMs = 0;

  /** Fault injection: the kernel OOM-kills a container (the whole cgroup: memory.oom.group). */
  oomKill(namespace: string, name: string, container: string): boolean {
    const c = this.pods.get(`${namespace}/${name}`)?.containers.find((x) => x.spec.name === container);
    if (!c?.process) return false;
    c.oomKilled = true;
    c.process.signal('SIGKILL');
    return true;
  }

  constructor(
    private readonly store: ObjectStore,
    private readonly options: KubeletOptions,
  ) {}

  /** A pod was stored: take it through its life asynchronously. */
  admit(pod: KubeObject): void {
    const rt = newPodRuntime(pod);
    this.pods.set(`${rt.namespace}/${rt.name}`, rt);
    setImmediate(() => {
      this.run(rt).catch((error: unknown) => this.failPod(rt, 'StartError', String(error)));
    });
  }

  private async run(rt: PodRuntime): Promise<void> {
    const stored = this.store.get(PODS, rt.namespace, rt.name);
    const onNode = this.store.list(PODS, undefined, (p) => podSpec(p).nodeName === this.options.nodeName);
    const misfit = stored && unschedulable(stored, onNode, this.options.allocatable);
    if (misfit) {
      this.write(rt, (pod) => {
        pod.status = { ...(pod.status as object), conditions: [unschedulableCondition(misfit)] };
      });
      return;
    }
    this.write(rt, (pod) => {
      podSpec(pod).nodeName = this.options.nodeName;
      pod.status = { ...(pod.status as object), conditions: conditions('scheduled') };
    });
    await tick();
    const unpullable = rt.containers.find((c) => !this.options.pullable(c.spec.image));
    if (unpullable) return this.imagePullFailure(rt, unpullable);
    for (const c of rt.containers)
      c.view.imageID = `${imageRepository(c.spec.image)}@${this.options.imageDigest(c.spec.image)}`;
    const ip = `10.244.0.${this.ipCounter++ % 250}`;
    this.write(rt, (pod) => {
      pod.status = {
        ...(pod.status as object),
        conditions: conditions('creating'),
        hostIP: '127.0.0.1',
        hostIPs: [{ ip: '127.0.0.1' }],
        podIP: ip,
        podIPs: [{ ip }],
        startTime: now(),
        containerStatuses: rt.containers.map((c) => containerStatus(c.view)),
      };
    });
    const pod = this.store.get(PODS, rt.namespace, rt.name);
    if (!pod || rt.deleting) return;
    for (const c of rt.containers) {
      const refusal = runAsRootRefusal(pod, c.spec);
      if (refusal) {
        c.view.state = { waiting: { reason: 'CreateContainerConfigError', message: refusal } };
        this.write(rt, (p) => applyStatus(rt, p, 'Pending'));
        return;
      }
    }
    const launches = rt.containers.map((c) => launchOf(pod, c.spec, this.options.defaultEntrypoint));
    const sandbox = await this.options.runner.createSandbox({
      ...sandboxSpecOf(pod, launches),
      network: podNetwork(this.store, pod),
    });
    rt.sandbox = sandbox;
    if (rt.deleting) return sandbox.destroy();
    await Promise.all(rt.containers.map((c) => this.startContainer(rt, c, pod)));
    // deleted while starting: tearDown saw no processes, so these are ours to stop
    if (rt.deleting) return this.killAll(rt, 0).then(() => sandbox.destroy());
    this.write(rt, (p) => applyStatus(rt, p, phaseOf(rt)));
    for (const c of rt.containers) this.watchExit(rt, c, pod);
    const deadline = podSpec(pod).activeDeadlineSeconds;
    if (deadline !== undefined) podTimer(rt, deadline * 1000, () => this.deadlineExceeded(rt));
  }

  private async startContainer(rt: PodRuntime, c: ContainerRuntime, pod: KubeObject): Promise<void> {
    const sandbox = rt.sandbox as PodSandbox;
    const containerID = `containerd://${randomBytes(32).toString('hex')}`;
    try {
      const process = await sandbox.start(launchOf(pod, c.spec, this.options.defaultEntrypoint));
      const log = c.log;
      process.stdout.on('data', (d: Buffer) => this.lagged(() => log.append(d)));
      process.stderr.on('data', (d: Buffer) => this.lagged(() => log.append(d)));
      await process.started;
      c.process = process;
      c.view.containerID = containerID;
      c.view.state = { running: { startedAt: now() } };
    } catch (error) {
      c.done = true;
      c.log.end();
      const message = error instanceof Error ? error.message : String(error);
      c.view.state = {
        terminated: { exitCode: 128, reason: 'StartError', message, finishedAt: now(), containerID },
      };
    }
  }

  private watchExit(rt: PodRuntime, c: ContainerRuntime, pod: KubeObject): void {
    const process = c.process;
    if (!process) return;
    process.exit.then(
      async (exit) => {
        const log = c.log;
        this.lagged(() => log.end());
        for (const e of c.execs) e.signal('SIGKILL');
        if (this.statusLagMs > 0) await new Promise((r) => setTimeout(r, this.statusLagMs));
        const startedAt = 'running' in c.view.state ? c.view.state.running.startedAt : undefined;
        const oom = exit.oomKilled || c.oomKilled === true;
        const reason = oom ? 'OOMKilled' : exit.exitCode === 0 ? 'Completed' : 'Error';
        c.view.state = {
          terminated: {
            exitCode: exit.exitCode,
            reason,
            startedAt,
            finishedAt: now(),
            containerID: c.view.containerID,
          },
        };
        c.process = undefined;
        const policy = podSpec(pod).restartPolicy;
        const restart =
          !rt.deleting &&
          !rt.failure &&
          (policy === 'Always' || (policy === 'OnFailure' && exit.exitCode !== 0));
        if (restart) return this.restart(rt, c, pod);
        c.done = true;
        if (!rt.deleting) this.write(rt, (p) => applyStatus(rt, p, phaseOf(rt)));
      },
      () => {},
    );
  }

  private restart(rt: PodRuntime, c: ContainerRuntime, pod: KubeObject): void {
    c.view.lastState = c.view.state;
    c.view.state = {
      waiting: { reason: 'CrashLoopBackOff', message: 'back-off restarting failed container' },
    };
    this.write(rt, (p) => applyStatus(rt, p, 'Running'));
    podTimer(rt, this.options.restartBackoffMs, async () => {
      if (rt.deleting || rt.failure) return;
      c.previousLog = c.log;
      c.log = new LogBuffer();
      c.view.restartCount += 1;
      await this.startContainer(rt, c, pod);
      this.write(rt, (p) => applyStatus(rt, p, phaseOf(rt)));
      this.watchExit(rt, c, pod);
    });
  }

  private imagePullFailure(rt: PodRuntime, c: ContainerRuntime): void {
    const ref = normalizeImage(c.spec.image);
    const pullMessage = `failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found`;
    c.view.state = { waiting: { reason: 'ErrImagePull', message: pullMessage } };
    this.write(rt, (p) => applyStatus(rt, p, 'Pending'));
    podTimer(rt, 10, () => {
      c.view.state = {
        waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${c.spec.image}"` },
      };
      this.write(rt, (p) => applyStatus(rt, p, 'Pending'));
    });
  }

  private deadlineExceeded(rt: PodRuntime): void {
    if (rt.deleting || rt.containers.every((c) => c.done)) return;
    rt.failure = {
      reason: 'DeadlineExceeded',
      message: 'Pod was active on the node longer than the specified deadline',
    };
    this.killAll(rt, this.graceSeconds(rt));
  }

  private failPod(rt: PodRuntime, reason: string, message: string): void {
    rt.failure = { reason, message };
    for (const c of rt.containers) {
      c.done = true;
      if (!('terminated' in c.view.state))
        c.view.state = { terminated: { exitCode: 128, reason, message, finishedAt: now() } };
    }
    this.write(rt, (p) => applyStatus(rt, p, 'Failed'));
  }

  private graceSeconds(rt: PodRuntime): number {
    const pod = this.store.get(PODS, rt.namespace, rt.name);
    return pod ? (podSpec(pod).terminationGracePeriodSeconds ?? 30) : 0;
  }

  /** SIGTERM every container, SIGKILL whatever is left after `grace` seconds; resolves when all are gone. */
  private async killAll(rt: PodRuntime, grace: number): Promise<void> {
    const live = rt.containers.map((c) => c.process).filter((p): p is ContainerProcess => p !== undefined);
    for (const p of live) p.signal(grace === 0 ? 'SIGKILL' : 'SIGTERM');
    if (grace > 0)
      podTimer(rt, grace * 1000, () => {
        for (const p of live) p.signal('SIGKILL');
      });
    await Promise.allSettled(live.map((p) => p.exit));
  }

  /**
   * DELETE of a pod. grace 0 removes it from the store at once (and kills in the background); otherwise the
   * pod is marked for deletion and removed once its containers have stopped.
   */
  delete(namespace: string, name: string, graceSeconds: number | undefined): KubeObject {
    const pod = this.store.get(PODS, namespace, name);
    if (!pod) throw errors.notFound({ group: '', resource: 'pods', name });
    const rt = this.pods.get(`${namespace}/${name}`);
    const grace = graceSeconds ?? podSpec(pod).terminationGracePeriodSeconds ?? 30;
    if (grace === 0 || !rt) {
      const removed = this.store.remove(PODS, namespace, name);
      this.options.onPodChange(namespace);
      if (rt) void this.tearDown(rt, 0);
      return removed;
    }
    if (rt.deleting) return pod;
    rt.deleting = true;
    if (this.stalled) rt.stalledDelete = true;
    const marked = this.write(rt, (p) => {
      p.metadata.deletionTimestamp = new Date(Date.now() + grace * 1000)
        .toISOString()
        .replace(/\.\d+Z$/, 'Z');
      p.metadata.deletionGracePeriodSeconds = grace;
    });
    if (!rt.stalledDelete) void this.tearDown(rt, grace);
    return marked ?? pod;
  }

  private async tearDown(rt: PodRuntime, grace: number): Promise<void> {
    rt.deleting = true;
    await this.killAll(rt, grace);
    for (const t of rt.timers) clearTimeout(t);
    rt.timers.clear();
    await rt.sandbox?.destroy().catch(() => {});
    for (const { log } of rt.containers) this.lagged(() => log.end());
    // a pod of the same name created since (after a grace-0 delete) is another pod: keyed by uid, as a kubelet
    const key = `${rt.namespace}/${rt.name}`;
    if (this.pods.get(key) === rt) this.pods.delete(key);
    const current = this.store.get(PODS, rt.namespace, rt.name);
    if (current && current.metadata.uid === rt.uid) {
      this.store.remove(PODS, rt.namespace, rt.name);
      this.options.onPodChange(rt.namespace);
    }
  }

  /** Apply `logLagMs` to a log write (timers of one duration fire in the order they were set). */
  private lagged(write: () => void): void {
    if (this.logLagMs > 0) setTimeout(write, this.logLagMs).unref();
    else write();
  }

  /** Start `argv` in a running container of a pod (the exec subresource). */
  async exec(
    namespace: string,
    name: string,
    container: string | null,
    argv: string[],
    options: ExecOptions,
  ): Promise<ContainerProcess> {
    const { rt, c, pod } = this.container(namespace, name, container);
    const phase = (pod.status as { phase?: string }).phase;
    if (phase === 'Succeeded' || phase === 'Failed') {
      throw errors.badRequest(`cannot exec into a container in a completed pod; current phase is ${phase}`);
    }
    if (!c.process || !rt.sandbox) throw errors.badRequest(`container not found ("${c.spec.name}")`);
    const process = await rt.sandbox.exec(
      launchOf(pod, c.spec, this.options.defaultEntrypoint),
      argv,
      options,
    );
    c.execs.add(process);
    const forget = () => c.execs.delete(process);
    process.exit.then(forget, forget);
    return process;
  }

  /** The log of a pod's container (or of its previous instance). */
  log(namespace: string, name: string, container: string | null, previous: boolean): LogBuffer {
    const { c } = this.container(namespace, name, container);
    if (previous) {
      if (!c.previousLog)
        throw errors.badRequest(`previous terminated container "${c.spec.name}" in pod "${name}" not found`);
      return c.previousLog;
    }
    if ('waiting' in c.view.state && !c.process && c.view.restartCount === 0) {
      throw errors.badRequest(
        `container "${c.spec.name}" in pod "${name}" is waiting to start: ${c.view.state.waiting.reason}`,
      );
    }
    return c.log;
  }

  private container(namespace: string, name: string, container: string | null) {
    const pod = this.store.get(PODS, namespace, name);
    const rt = this.pods.get(`${namespace}/${name}`);
    if (!pod || !rt) throw errors.notFound({ group: '', resource: 'pods', name });
    const names = rt.containers.map((c) => c.spec.name);
    if (container === null && names.length > 1) {
      throw errors.badRequest(
        `a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`,
      );
    }
    const c = container === null ? rt.containers[0] : rt.containers.find((x) => x.spec.name === container);
    if (!c) throw errors.badRequest(`container ${container} is not valid for pod ${name}`);
    return { rt, c, pod };
  }

  /** Kill every pod's processes and remove their sandboxes (server shutdown). */
  async shutdown(): Promise<void> {
    await Promise.all([...this.pods.values()].map((rt) => this.tearDown(rt, 0)));
  }

  /** Read-modify-write the pod in the store, if it is still this pod. */
  private write(rt: PodRuntime, mutate: (pod: KubeObject) => void): KubeObject | undefined {
    const pod = this.store.get(PODS, rt.namespace, rt.name);
    if (!pod || pod.metadata.uid !== rt.uid) return undefined;
    mutate(pod);
    const updated = this.store.update(PODS, pod);
    this.options.onPodChange(rt.namespace);
    return updated;
  }
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
