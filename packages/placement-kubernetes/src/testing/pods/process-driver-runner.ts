// Pod containers in bubblewrap sandboxes of @everdict/placement-process: one sandbox per pod (new user,
// pid, ipc, uts and — when a NetworkPolicy denies the pod egress — net namespaces, the host's read-only
// system directories as every image's root filesystem, cgroup memory/pids limits), each container process
// and each exec a command in it. The process driver offers one shared directory, its workspace: each pod
// volume is a directory in it, and the working directory and env values naming a mounted path are
// resolved onto that directory (as the child-process runner does). Each command gets its own pid namespace
// and /tmp, so an exec cannot signal another; SIGTERM is delivered as the driver's kill (SIGKILL).
import { type Driver, type ExecStream, isPlacementError, type SandboxHandle } from '@everdict/placement';
import { ProcessDriver, type ProcessDriverConfigInput, WORKSPACE } from '@everdict/placement-process';
import type {
  ContainerLaunch,
  ContainerProcess,
  ContainerRunner,
  ExecOptions,
  PodSandbox,
  PodSandboxSpec,
  ProcessExit,
} from './container-runner.js';

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
// below 2^31 ms: Node fires longer timers at once
const SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000;

export interface ProcessDriverRunnerOptions {
  /** The process driver's own configuration (state directory, limits mode…); `sandboxUid` is the pod's runAsUser. */
  driver?: Omit<ProcessDriverConfigInput, 'sandboxUid' | 'sandboxGid'>;
  /** The process-driver image a container image runs on (default: `default`, the host's system directories). */
  imageFor?: (containerImage: string) => string;
}

export class ProcessDriverRunner implements ContainerRunner {
  readonly name = 'placement-process';
  private readonly drivers = new Map<number, ProcessDriver>();
  constructor(private readonly options: ProcessDriverRunnerOptions = {}) {}

  /** One process driver per sandbox user, so a pod's runAsUser is the host user its processes run as. */
  private driverFor(uid: number, gid: number): ProcessDriver {
    let driver = this.drivers.get(uid);
    if (!driver) {
      driver = new ProcessDriver({ ...this.options.driver, sandboxUid: uid, sandboxGid: gid, slots: 1024 });
      this.drivers.set(uid, driver);
    }
    return driver;
  }

  async createSandbox(spec: PodSandboxSpec): Promise<PodSandbox> {
    const first = spec.containers[0];
    const uid = first?.runAsUser ?? 65534;
    const driver = this.driverFor(uid, spec.fsGroup ?? first?.runAsGroup ?? uid);
    const memory = spec.containers.reduce((n, c) => n + (c.memoryLimitBytes ?? 0n), 0n);
    const handle = await driver.provision({
      image: this.options.imageFor?.(first?.image ?? '') ?? 'default',
      network: spec.network,
      limits: { wallTimeoutMs: SEVEN_DAYS_MS, ...(memory > 0n ? { memoryBytes: Number(memory) } : {}) },
      labels: { tenant: spec.namespace, runId: spec.uid, kind: 'sandbox' },
    });
    if (spec.volumes.length > 0) {
      const made = await driver.exec(handle, ['mkdir', '-p', ...spec.volumes]);
      if (made.exitCode !== 0)
        throw new Error(`volumes could not be made: ${Buffer.from(made.stderr).toString()}`);
    }
    return new ProcessSandbox(driver, handle);
  }
}

class ProcessSandbox implements PodSandbox {
  constructor(
    private readonly driver: Driver,
    private readonly handle: SandboxHandle,
  ) {}

  start(container: ContainerLaunch): Promise<ContainerProcess> {
    return this.run(container, container.argv, true, false);
  }

  exec(container: ContainerLaunch, argv: string[], options: ExecOptions): Promise<ContainerProcess> {
    return this.run(container, argv, options.stdin, options.tty);
  }

  async destroy(): Promise<void> {
    await this.driver.dispose(this.handle);
  }

  /** A path inside the container, as seen inside the process sandbox (volumes live in its workspace). */
  private resolve(container: ContainerLaunch, path: string): string {
    for (const mount of container.mounts) {
      if (path === mount.mountPath || path.startsWith(`${mount.mountPath}/`)) {
        return `${WORKSPACE}/${mount.name}${path.slice(mount.mountPath.length)}`;
      }
    }
    return path;
  }

  private async run(
    container: ContainerLaunch,
    argv: string[],
    withStdin: boolean,
    tty: boolean,
  ): Promise<ContainerProcess> {
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(container.env)) env[key] = this.resolve(container, value);
    const first = container.mounts[0];
    const cwd = container.workingDir
      ? this.resolve(container, container.workingDir)
      : first
        ? `${WORKSPACE}/${first.name}`
        : WORKSPACE;
    const stream: ExecStream = await this.driver.stream(this.handle, argv, {
      env,
      cwd,
      tty: tty && this.driver.describe().capabilities.pty,
    });
    if (!withStdin) stream.stdin.end();
    stream.stdin.on('error', () => {});
    const exit: Promise<ProcessExit> = stream.exit.then(
      (e) => ({ exitCode: e.exitCode ?? 128 + (SIGNALS[e.signal ?? ''] ?? 9), oomKilled: false }),
      (error: unknown) => {
        if (isPlacementError(error, 'oom')) return { exitCode: 137, oomKilled: true };
        if (isPlacementError(error)) return { exitCode: 137, oomKilled: false };
        throw error;
      },
    );
    return {
      stdin: withStdin ? stream.stdin : null,
      stdout: stream.stdout,
      stderr: stream.stderr,
      resize: (columns, rows) => {
        if (columns > 0 && rows > 0) stream.resize({ cols: columns, rows });
      },
      signal: () => stream.kill(),
      started: Promise.resolve(),
      exit,
    };
  }
}
