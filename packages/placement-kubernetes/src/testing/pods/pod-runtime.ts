// What the kubelet keeps per pod (its containers' processes, logs, views) and the pod status it derives
// from that: the phase, the conditions, the container statuses.
import type { KubeObject } from '../selectors.js';
import type { ContainerProcess, PodSandbox } from './container-runner.js';
import { LogBuffer } from './log-buffer.js';
import { type ContainerSpec, normalizeImage, podSpec } from './pod-spec.js';
import { type ContainerView, conditions, containerStatus } from './pod-status.js';

export interface ContainerRuntime {
  spec: ContainerSpec;
  view: ContainerView;
  process: ContainerProcess | undefined;
  log: LogBuffer;
  previousLog: LogBuffer | undefined;
  done: boolean;
  /** Processes started in the container by exec; they die with it. */
  execs: Set<ContainerProcess>;
  /** Killed by the kernel's OOM killer (fault injection): its exit reports OOMKilled. */
  oomKilled?: boolean;
}

export interface PodRuntime {
  uid: string;
  namespace: string;
  name: string;
  sandbox: PodSandbox | undefined;
  containers: ContainerRuntime[];
  deleting: boolean;
  removed: boolean;
  failure: { reason: string; message: string } | undefined;
  timers: Set<NodeJS.Timeout>;
  /** A graceful delete arrived while the node was stalled: nothing will finish it but a forced delete. */
  stalledDelete?: boolean;
}

export function newPodRuntime(pod: KubeObject): PodRuntime {
  const spec = podSpec(pod);
  return {
    uid: String(pod.metadata.uid),
    namespace: pod.metadata.namespace ?? 'default',
    name: pod.metadata.name,
    sandbox: undefined,
    containers: spec.containers.map((c) => ({
      spec: c,
      view: {
        name: c.name,
        state: { waiting: { reason: 'ContainerCreating' } },
        lastState: {},
        restartCount: 0,
        image: normalizeImage(c.image),
        imageID: '',
        containerID: undefined,
      },
      process: undefined,
      log: new LogBuffer(),
      previousLog: undefined,
      done: false,
      execs: new Set(),
    })),
    deleting: false,
    removed: false,
    failure: undefined,
    timers: new Set(),
  };
}

export function phaseOf(rt: PodRuntime): string {
  if (rt.failure) return rt.containers.every((c) => c.done) ? 'Failed' : 'Running';
  if (!rt.containers.every((c) => c.done)) return 'Running';
  const failed = rt.containers.some(
    (c) => 'terminated' in c.view.state && c.view.state.terminated.exitCode !== 0,
  );
  return failed ? 'Failed' : 'Succeeded';
}

export function applyStatus(rt: PodRuntime, pod: KubeObject, phase: string): void {
  const running = rt.containers.every((c) => 'running' in c.view.state);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const stage = terminal ? 'completed' : phase === 'Pending' ? 'creating' : running ? 'running' : 'notready';
  const status = { ...(pod.status as Record<string, unknown>) };
  status.phase = phase;
  status.conditions = conditions(stage);
  status.containerStatuses = rt.containers.map((c) => containerStatus(c.view));
  if (rt.failure && terminal) {
    status.reason = rt.failure.reason;
    status.message = rt.failure.message;
  }
  pod.status = status;
}

/** A timer owned by the pod; delays past Node's 2^31 − 1 ms limit (a long activeDeadlineSeconds) re-arm. */
export function podTimer(rt: PodRuntime, ms: number, fn: () => void): void {
  const step = Math.min(ms, 2 ** 31 - 1);
  const t = setTimeout(() => {
    rt.timers.delete(t);
    if (ms > step) podTimer(rt, ms - step, fn);
    else fn();
  }, step);
  rt.timers.add(t);
}
