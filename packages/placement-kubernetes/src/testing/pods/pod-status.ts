// Pod and container status objects as the kubelet reports them (v1.PodStatus / v1.ContainerStatus).
import type { Json } from './pod-spec.js';

export type ContainerState =
  | { waiting: { reason: string; message?: string } }
  | { running: { startedAt: string } }
  | {
      terminated: {
        exitCode: number;
        reason: string;
        message?: string;
        startedAt?: string;
        finishedAt: string;
        containerID?: string;
      };
    };

export interface ContainerView {
  name: string;
  state: ContainerState;
  lastState: ContainerState | Record<string, never>;
  restartCount: number;
  image: string;
  imageID: string;
  containerID: string | undefined;
}

export const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

export function containerStatus(c: ContainerView): Json {
  const running = 'running' in c.state;
  return {
    name: c.name,
    state: c.state,
    lastState: c.lastState,
    ready: running,
    restartCount: c.restartCount,
    image: c.image,
    imageID: 'waiting' in c.state && c.imageID === '' ? '' : c.imageID,
    ...(c.containerID ? { containerID: c.containerID } : {}),
    started: running,
  };
}

type Condition = { type: string; status: 'True' | 'False'; reason?: string };

/** The pod's conditions for a phase: scheduled, started, ready (or completed). */
export function conditions(stage: 'scheduled' | 'creating' | 'running' | 'completed' | 'notready'): Json[] {
  const at = now();
  const list: Condition[] = [{ type: 'PodScheduled', status: 'True' }];
  if (stage !== 'scheduled') {
    const started = stage === 'running' || stage === 'notready';
    const ready = stage === 'running';
    const done = stage === 'completed' ? 'PodCompleted' : undefined;
    list.push(
      {
        type: 'PodReadyToStartContainers',
        status: stage === 'creating' ? 'False' : started || done ? 'True' : 'False',
      },
      { type: 'Initialized', status: 'True', ...(done ? { reason: done } : {}) },
      {
        type: 'Ready',
        status: ready ? 'True' : 'False',
        ...(done ? { reason: done } : ready ? {} : { reason: 'ContainersNotReady' }),
      },
      {
        type: 'ContainersReady',
        status: ready ? 'True' : 'False',
        ...(done ? { reason: done } : ready ? {} : { reason: 'ContainersNotReady' }),
      },
    );
  }
  return list.map((c) => ({ ...c, lastProbeTime: null, lastTransitionTime: at }));
}
