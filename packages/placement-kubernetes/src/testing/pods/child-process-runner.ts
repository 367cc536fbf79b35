// The plainest runner: each container is a child process in its own process group, run as the pod's
// runAsUser (we are root), no namespaces, no network isolation, with each emptyDir volume a private directory owned by that user. It cannot
// remap paths, so a container's working directory and any env value naming a mounted path are resolved
// onto the volume's host directory; other absolute paths in commands see the host filesystem. No
// terminals (resize is recorded), no memory limit.
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import type {
  ContainerLaunch,
  ContainerProcess,
  ContainerRunner,
  ExecOptions,
  PodSandbox,
  PodSandboxSpec,
  ProcessExit,
} from './container-runner.js';

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15, SIGPIPE: 13 };

export interface ChildProcessRunnerOptions {
  /** Where pod directories are made (default: the OS temp directory). */
  root?: string;
}

export class ChildProcessRunner implements ContainerRunner {
  readonly name = 'child-process';
  readonly resizes: { columns: number; rows: number }[] = [];
  constructor(private readonly options: ChildProcessRunnerOptions = {}) {}

  async createSandbox(spec: PodSandboxSpec): Promise<PodSandbox> {
    const root = await mkdtemp(join(this.options.root ?? tmpdir(), `everdict-pod-${spec.name}-`));
    // the pod's user must be able to reach its volumes (mkdtemp makes the directory 0700 root)
    await chmod(root, 0o711);
    await mkdir(join(root, 'volumes'), { mode: 0o711 });
    const volumes = new Map<string, string>();
    const owner = spec.containers.find((c) => c.runAsUser !== undefined);
    for (const volume of spec.volumes) {
      const dir = join(root, 'volumes', volume);
      await mkdir(dir, { recursive: true });
      if (owner?.runAsUser !== undefined) {
        await chown(dir, owner.runAsUser, spec.fsGroup ?? owner.runAsGroup ?? owner.runAsUser);
      }
      volumes.set(volume, dir);
    }
    return new ChildProcessSandbox(root, volumes, this.resizes);
  }
}

class ChildProcessSandbox implements PodSandbox {
  private readonly processes = new Set<ContainerProcess>();
  constructor(
    private readonly root: string,
    private readonly volumes: Map<string, string>,
    private readonly resizes: { columns: number; rows: number }[],
  ) {}

  async start(container: ContainerLaunch): Promise<ContainerProcess> {
    return this.spawn(container, container.argv, true);
  }

  async exec(container: ContainerLaunch, argv: string[], options: ExecOptions): Promise<ContainerProcess> {
    return this.spawn(container, argv, options.stdin);
  }

  async destroy(): Promise<void> {
    for (const p of this.processes) p.signal('SIGKILL');
    await Promise.allSettled([...this.processes].map((p) => p.exit));
    await rm(this.root, { recursive: true, force: true });
  }

  /** The host directory for a path inside the container, when it lies on a volume. */
  private hostPath(container: ContainerLaunch, path: string | undefined): string {
    if (path) {
      for (const mount of container.mounts) {
        const rel = relative(mount.mountPath, path);
        const dir = this.volumes.get(mount.name);
        if (dir && !rel.startsWith('..')) return join(dir, rel);
      }
    }
    const first = container.mounts.find((m) => this.volumes.has(m.name));
    return first ? (this.volumes.get(first.name) as string) : this.root;
  }

  private spawn(container: ContainerLaunch, argv: string[], withStdin: boolean): ContainerProcess {
    const [file = '', ...args] = argv;
    const cwd = this.hostPath(container, container.workingDir);
    // an env value naming a path on a volume is rewritten to where that volume is on the host
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(container.env)) {
      env[key] = container.mounts.some((m) => value === m.mountPath || value.startsWith(`${m.mountPath}/`))
        ? this.hostPath(container, value)
        : value;
    }
    const child = spawn(file, args, {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, ...env },
      stdio: [withStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
      ...(container.runAsUser !== undefined
        ? { uid: container.runAsUser, gid: container.runAsGroup ?? container.runAsUser }
        : {}),
    });
    const started = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    const exit = new Promise<ProcessExit>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => {
        resolve({ exitCode: code ?? 128 + (SIGNALS[signal ?? ''] ?? 9), oomKilled: false });
      });
    });
    const running: ContainerProcess = {
      stdin: child.stdin,
      stdout: child.stdout as Readable,
      stderr: child.stderr as Readable,
      resize: (columns, rows) => {
        this.resizes.push({ columns, rows });
      },
      signal: (signal) => {
        // not once it was reaped: its pid (the group's id) may be another process's by then
        if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
        try {
          process.kill(-child.pid, signal);
        } catch {
          // already gone
        }
      },
      started,
      exit,
    };
    started.catch(() => {});
    exit.catch(() => {});
    child.stdin?.on('error', () => {});
    this.processes.add(running);
    exit.then(
      () => this.processes.delete(running),
      () => this.processes.delete(running),
    );
    return running;
  }
}
