// One command in a sandbox: bubblewrap started as the sandbox user in its own process group; with
// cgroups, the namespace's init is held (--block-fd) until it has been moved into the sandbox's cgroups
// (--info-fd gives its pid), so the command and everything it forks are limited and counted from the
// first instruction. A watcher ends the command on the wall budget, the CPU-time limit, an OOM kill or a
// refused fork, and records why.
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { type CommandBudget, PlacementError, wallTimer } from '@everdict/placement';
import { HOST_ENV, sandboxCwd } from './bwrap-args.js';
import type { LimitCounters, SandboxLimits } from './limits/limits.js';

export type StopReason =
  | { readonly kind: 'timeout'; readonly bound: 'exec' | 'deadline' | 'cpu' }
  | { readonly kind: 'oom' }
  | { readonly kind: 'pids_exhausted' }
  | { readonly kind: 'output_capped' }
  | { readonly kind: 'gone' }
  | { readonly kind: 'killed' };

/** The descriptor a command with a control pipe reads it on. */
export const CONTROL_FD = 5;

export interface CommandSetup {
  readonly bwrap: string;
  readonly args: readonly string[];
  readonly limits: SandboxLimits;
  readonly user: { readonly uid: number; readonly gid: number } | null;
  readonly cpuTimeMs: number | undefined;
  readonly pollMs: number;
}

export interface CommandExit {
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stop: StopReason | null;
}

/** A started command: its stdio, how to stop it, and how it ended. */
export class SandboxCommand {
  readonly child: ChildProcess;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly exited: Promise<CommandExit>;
  /** The write end of the command's fd 5, when asked for. */
  readonly control: Writable | null;
  private stopReason: StopReason | null = null;
  private nsInit: number | null = null;
  private timers: NodeJS.Timeout[] = [];
  private wall: { clear(): void } | undefined;
  private spawnError: Error | null = null;
  private closed = false;

  constructor(
    private readonly setup: CommandSetup,
    argv: readonly string[],
    env: Record<string, string>,
    cwd: string | undefined,
    budget: CommandBudget,
    before: LimitCounters,
    /** Open a pipe the command reads as fd 5 (the pty's resize channel, see pty.ts). */
    withControl = false,
  ) {
    const { limits } = setup;
    const hold = limits.joinsByPid ? ['--info-fd', '3', '--block-fd', '4'] : [];
    // The command's environment goes in as bubblewrap arguments, never into bubblewrap's own environment:
    // bubblewrap runs on the host, outside the namespaces, and must not see LD_PRELOAD and the like.
    const vars = Object.entries(env).flatMap(([k, v]) => ['--setenv', k, v]);
    const full = [
      ...limits.wrapper,
      setup.bwrap,
      ...setup.args,
      '--clearenv',
      ...vars,
      '--chdir',
      sandboxCwd(cwd),
      ...hold,
      '--',
      ...argv,
    ];
    this.child = spawn(full[0]!, full.slice(1), {
      detached: true,
      env: HOST_ENV,
      stdio: [
        'pipe',
        'pipe',
        'pipe',
        ...(limits.joinsByPid
          ? (['pipe', 'pipe'] as const)
          : withControl
            ? (['ignore', 'ignore'] as const)
            : []),
        ...(withControl ? (['pipe'] as const) : []),
      ],
      ...(setup.user ?? {}),
    });
    this.stdin = this.child.stdin!;
    this.stdout = this.child.stdout!;
    this.stderr = this.child.stderr!;
    this.stdin.on('error', () => undefined); // EPIPE when the command does not read its stdin
    const stdio = this.child.stdio as unknown as readonly (Writable | Readable | null)[];
    this.control = withControl ? (stdio[CONTROL_FD] as Writable) : null;
    this.control?.on('error', () => undefined);
    this.child.on('error', (e) => {
      this.spawnError = e;
    });
    if (limits.joinsByPid) this.holdUntilJoined();
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.closed = true;
        for (const t of this.timers) clearTimeout(t);
        this.wall?.clear();
        this.control?.destroy();
        resolve({ exitCode: code, signal, stop: this.stopReason });
      });
    });
    this.watch(budget, before);
  }

  /** Why the command was stopped, if it was. */
  get stop(): StopReason | null {
    return this.stopReason;
  }

  get failedToSpawn(): Error | null {
    return this.spawnError;
  }

  private holdUntilJoined(): void {
    const info = this.child.stdio[3] as Readable;
    const release = this.child.stdio[4] as Writable;
    release.on('error', () => undefined);
    info.on('error', () => undefined);
    let text = '';
    info.on('data', (chunk: Buffer) => {
      if (this.nsInit !== null) return;
      text += chunk.toString('utf8');
      const m = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (!m) return;
      this.nsInit = Number(m[1]);
      try {
        this.setup.limits.join(this.nsInit);
      } catch (e) {
        this.spawnError = e as Error;
        this.kill({ kind: 'killed' });
        return;
      }
      release.end('1');
      // Keep reading to the end: bubblewrap writes more (namespace ids) after the pid, and a closed
      // reader would kill it with SIGPIPE before it lets its child run.
    });
  }

  private watch(budget: CommandBudget, before: LimitCounters): void {
    // wallTimer, not setTimeout: a budget past 2^31 − 1 ms (a long wallTimeoutMs) must not fire at once.
    this.wall = wallTimer(budget.ms, () => this.kill({ kind: 'timeout', bound: budget.bound }));
    if (!this.setup.limits.joinsByPid) return;
    const poll = async () => {
      if (this.stopReason !== null || this.closed) return;
      const now = await this.setup.limits.counters();
      if (now.oomKills > before.oomKills) return this.kill({ kind: 'oom' });
      if (now.pidsRefused > before.pidsRefused) return this.kill({ kind: 'pids_exhausted' });
      if (this.setup.cpuTimeMs !== undefined) {
        const used = (await this.setup.limits.usage()).cpuTimeMs;
        if (used !== null && used >= this.setup.cpuTimeMs)
          return this.kill({ kind: 'timeout', bound: 'cpu' });
      }
      this.timers.push(setTimeout(poll, this.setup.pollMs));
    };
    this.timers.push(setTimeout(poll, this.setup.pollMs));
  }

  /** SIGKILLs the command's process group and its namespace init (which ends the whole pid namespace). */
  kill(reason: StopReason): void {
    if (this.closed) return;
    if (this.stopReason === null) this.stopReason = reason;
    const pid = this.child.pid;
    for (const target of [pid === undefined ? null : -pid, this.nsInit]) {
      if (target === null) continue;
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/** The refusal for a command stopped by a limit, with what was observed in `detail`. */
export function stopError(
  stop: StopReason,
  budget: CommandBudget,
  detail: Record<string, unknown>,
): PlacementError {
  switch (stop.kind) {
    case 'timeout':
      return new PlacementError(
        'timeout',
        stop.bound === 'cpu'
          ? 'the sandbox used up its CPU-time limit'
          : `the ${stop.bound === 'exec' ? "command's timeout" : "sandbox's wall deadline"} ran out`,
        { bound: stop.bound, limitMs: budget.ms, ...detail },
      );
    case 'oom':
      return new PlacementError(
        'oom',
        "the sandbox's memory limit was reached and the kernel killed a process",
        detail,
      );
    case 'pids_exhausted':
      return new PlacementError(
        'pids_exhausted',
        "a fork was refused: the sandbox's pid limit is reached",
        detail,
      );
    case 'output_capped':
      return new PlacementError('output_capped', 'output passed the cap; the command was stopped', detail);
    case 'gone':
    case 'killed':
      return new PlacementError('gone', 'the sandbox was disposed while the command ran', detail);
  }
}

/** bubblewrap's own failure to start the command ("bwrap: execvp …", a mount it could not make) exits 1 with its message first. */
export function bwrapFailure(exitCode: number | null, stderr: Uint8Array): string | null {
  if (exitCode !== 1) return null;
  const head = Buffer.from(stderr.subarray(0, 512)).toString('utf8');
  return head.startsWith('bwrap: ') ? head.split('\n')[0]! : null;
}
