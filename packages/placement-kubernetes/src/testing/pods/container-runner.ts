// The seam between the test API server's kubelet and whatever really executes a pod's containers. The
// kubelet only starts, execs into, signals and tears down; a runner decides how isolated that is.

import type { Readable, Writable } from 'node:stream';

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly: boolean;
}

/** One container of a pod, as the kubelet hands it to a runner (already defaulted and validated). */
export interface ContainerLaunch {
  name: string;
  image: string;
  /** The process to run: `command` + `args` resolved against the (unknown) image entrypoint. */
  argv: string[];
  env: Record<string, string>;
  workingDir: string | undefined;
  mounts: VolumeMount[];
  runAsUser: number | undefined;
  runAsGroup: number | undefined;
  readOnlyRootFilesystem: boolean;
  memoryLimitBytes: bigint | undefined;
  cpuLimitMillis: bigint | undefined;
}

export interface PodSandboxSpec {
  uid: string;
  name: string;
  namespace: string;
  /** emptyDir volumes, shared by the pod's containers. */
  volumes: string[];
  fsGroup: number | undefined;
  /** The pod's containers, so a runner can prepare what they need before any starts. */
  containers: ContainerLaunch[];
  /** `none` when a NetworkPolicy denies the pod all egress (what a network plugin would enforce). */
  network: 'none' | 'granted';
}

export interface ProcessExit {
  /** The container runtime's exit code: 128 + signal number when killed by a signal. */
  exitCode: number;
  oomKilled: boolean;
}

export interface ContainerProcess {
  readonly stdin: Writable | null;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** A terminal resize; a runner without terminals records and ignores it. */
  resize(columns: number, rows: number): void;
  signal(signal: 'SIGTERM' | 'SIGKILL'): void;
  /** Settles when the process is running; rejects (with why) when it could not be started. */
  readonly started: Promise<void>;
  /** Settles when the process has exited (rejects as `started` does when it never started). */
  readonly exit: Promise<ProcessExit>;
}

export interface ExecOptions {
  stdin: boolean;
  tty: boolean;
}

export interface PodSandbox {
  /** Start a container's main process. A failure to start rejects (or rejects `started`): StartError. */
  start(container: ContainerLaunch): Promise<ContainerProcess>;
  /** Run a command in a running container, as `kubectl exec` does. */
  exec(container: ContainerLaunch, argv: string[], options: ExecOptions): Promise<ContainerProcess>;
  /** Remove everything the sandbox holds (processes are already dead or are killed here). */
  destroy(): Promise<void>;
}

export interface ContainerRunner {
  readonly name: string;
  createSandbox(spec: PodSandboxSpec): Promise<PodSandbox>;
}
