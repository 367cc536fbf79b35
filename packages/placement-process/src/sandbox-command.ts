// One command in a sandbox: bubblewrap started as the sandbox user in its own process group; with
// cgroups, bubblewrap itself is moved into the sandbox's cgroups before it reads the end of its options
// (fd 6), so the namespace init it clones — and the cgroup namespace made with it, rooted there: the sandbox
// sees `/` in /proc/self/cgroup — is in them from its first instruction; the init is held (--block-fd,
// --json-status-fd gives its pid) until bubblewrap was moved back out, so the command and everything it
// forks are limited and counted alone (SpawnRequest.join). A watcher ends the command on the wall budget, the CPU-time limit, an OOM kill or a
// refused fork, and records why.
import type { Duplex, Readable, Writable } from 'node:stream';
import { type CommandBudget, PlacementError, programNotStarted, wallTimer } from '@everdict/placement';
import { actsOnHost, hostProgram, sandboxCwd } from './bwrap-args.js';
import { type Launch, type LaunchWarning, launchInline, launchViaSpawner } from './launch.js';
import type { CgroupHierarchy, LimitCounters, SandboxLimits } from './limits/limits.js';
import { killedByCpuRlimit } from './limits/rlimit.js';
import { ARGS_FD, type Spawner, type SpawnRequest } from './spawner/client.js';

export type StopReason =
  | { readonly kind: 'timeout'; readonly bound: 'exec' | 'deadline' }
  | { readonly kind: 'timeout'; readonly bound: 'cpu'; readonly limitMs: number }
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
  /** The driver's spawner; null: fork this process (child_process.spawn) for each command. */
  readonly spawner: Spawner | null;
  /** Where the spawner warms the cgroup attach lock for a join (LimitBackend.warm). */
  readonly warm: CgroupHierarchy | null;
  /** Told when bubblewrap could not be moved back out of the sandbox's cgroups (the command runs). */
  readonly warn: LaunchWarning;
}

export interface CommandExit {
  readonly exitCode: number | null;
  readonly signal: string | null;
  /**
   * The command's exit status as bubblewrap reported it on its status descriptor (`exit-code`, shell
   * encoding); null when it reported none: bubblewrap failed before the command ran (or was killed).
   */
  readonly status: number | null;
  readonly stop: StopReason | null;
}

/** A started command: its stdio, how to stop it, and how it ended. */
export class SandboxCommand {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly exited: Promise<CommandExit>;
  /** Our end of the command's fd 5 (a socket), when asked for. */
  readonly control: Duplex | null;
  private stopReason: StopReason | null = null;
  private timers: NodeJS.Timeout[] = [];
  private wall: { clear(): void } | undefined;
  private closed = false;

  /**
   * Starts `argv` in the sandbox: through `spawner` when given (a small process that forks bubblewrap for
   * the driver), else with a fork of this process. Resolves once the command's pipes are here.
   */
  static async start(
    setup: CommandSetup,
    argv: readonly string[],
    env: Record<string, string>,
    cwd: string | undefined,
    budget: CommandBudget,
    before: LimitCounters,
    /** Open a pipe the command reads as fd 5 (the pty's resize channel, see pty.ts). */
    withControl = false,
    /** False: nothing is written to stdin — through the spawner the command reads end-of-file at once. */
    withStdin = true,
  ): Promise<SandboxCommand> {
    const { limits } = setup;
    // fd 3: bubblewrap's status (--json-status-fd): the namespace init's pid once it is made, then the
    // command's exit status once it was exec'd and ended — none when bubblewrap itself failed (bwrapFailure).
    const hold = limits.joinsByPid ? ['--block-fd', '4'] : [];
    // The command's environment is bubblewrap's own (it passes it on; its argv is every host user's to read,
    // its environment is not), but for the variables the host's loader and libc act on: bubblewrap runs on
    // the host, outside the namespaces, and must not see LD_PRELOAD and the like — those go in as arguments.
    // Bubblewrap and prlimit are found on the host's PATH, never the caller's (hostProgram).
    const own: Record<string, string> = {};
    const vars: string[] = [];
    for (const [k, v] of Object.entries(env)) {
      if (actsOnHost(k)) vars.push('--setenv', k, v);
      else own[k] = v;
    }
    const wrapper = limits.wrapper.map((arg, i) => (i === 0 ? hostProgram(arg) : arg));
    // Bubblewrap's own options are read from fd 6 (--args), not its argv: its namespace init is pid 1 in the
    // sandbox, a copy of it, and its command line (/proc/1/cmdline, and `ps` on the host) showed the
    // workspace's host path and the loader variables' values. Only the command's own argv stays there.
    const options = [...setup.args, ...vars, '--chdir', sandboxCwd(cwd), '--json-status-fd', '3', ...hold];
    const full = [...wrapper, hostProgram(setup.bwrap), '--args', String(ARGS_FD), '--', ...argv];
    const request: SpawnRequest = {
      file: full[0]!,
      args: full.slice(1),
      env: own,
      user: setup.user,
      join: limits.joinsByPid ? limits.joinFiles : null,
      leave: limits.joinsByPid ? limits.leaveFiles : null,
      status: true,
      warm: limits.joinsByPid ? setup.warm : null,
      control: withControl,
      stdin: withStdin,
      fdArgs: options,
    };
    const startedAt = performance.now();
    const launch = setup.spawner
      ? await launchViaSpawner(setup.spawner, request, setup.warn)
      : launchInline(request, limits, setup.warn);
    return new SandboxCommand(setup, launch, budget, before, startedAt);
  }

  private constructor(
    private readonly setup: CommandSetup,
    private readonly launch: Launch,
    budget: CommandBudget,
    before: LimitCounters,
    startedAt: number,
  ) {
    this.stdin = launch.stdin;
    this.stdout = launch.stdout;
    this.stderr = launch.stderr;
    this.control = launch.control;
    this.exited = launch.closed.then(({ code, signal, status }) => {
      this.closed = true;
      for (const t of this.timers) clearTimeout(t);
      this.wall?.clear();
      this.control?.destroy();
      // rlimits measure nothing: the kernel's SIGXCPU at RLIMIT_CPU is the only sign the CPU limit ended it
      const { cpuTimeMs } = setup;
      if (
        this.stopReason === null &&
        setup.limits.mechanism === 'rlimit' &&
        cpuTimeMs !== undefined &&
        killedByCpuRlimit(status, cpuTimeMs, performance.now() - startedAt)
      )
        this.stopReason = { kind: 'timeout', bound: 'cpu', limitMs: cpuTimeMs };
      return { exitCode: code, signal, status, stop: this.stopReason };
    });
    this.watch(budget, before);
  }

  /** Why the command was stopped, if it was. */
  get stop(): StopReason | null {
    return this.stopReason;
  }

  /** The namespace init's host pid once known (null: none yet, or no hold). */
  get nsInit(): number | null {
    return this.launch.nsInit();
  }

  get failedToSpawn(): Error | null {
    return this.launch.error();
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
          return this.kill({ kind: 'timeout', bound: 'cpu', limitMs: this.setup.cpuTimeMs });
      }
      this.timers.push(setTimeout(poll, this.setup.pollMs));
    };
    this.timers.push(setTimeout(poll, this.setup.pollMs));
  }

  /** SIGKILLs the command's process group and its namespace init (which ends the whole pid namespace). */
  kill(reason: StopReason): void {
    if (this.closed) return;
    if (this.stopReason === null) this.stopReason = reason;
    this.launch.kill();
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
        // the limit that ran out: the CPU-time limit for `cpu`, else the wall budget
        { bound: stop.bound, limitMs: stop.bound === 'cpu' ? stop.limitMs : budget.ms, ...detail },
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

/**
 * Bubblewrap's own failure to start the command ("bwrap: execvp …", a mount it could not make, or prlimit's
 * before it): it exited without reporting the command's exit status on its status descriptor, which it
 * does only for a command it exec'd. Told by that channel, not by the stderr text — a command may print
 * `bwrap: …` itself. The message is the first line of stderr (bubblewrap's own, as it wrote nothing else).
 * Its exec of the program failing (`bwrap: execvp <program>: <reason>`) is the program's own failure —
 * not found 127, else not executable 126, as a shell counts them (`programNotStarted`); any other is the
 * sandbox's.
 */
export function bwrapFailure(
  exit: Pick<CommandExit, 'exitCode' | 'status'>,
  stderr: Uint8Array,
  command: string | undefined,
): PlacementError | null {
  if (exit.exitCode === null || exit.status !== null) return null;
  const head = Buffer.from(stderr.subarray(0, 512)).toString('utf8').split('\n')[0]!.trim();
  if (head === '')
    return new PlacementError(
      'spawn_failed',
      `bubblewrap exited with ${exit.exitCode} before starting the command`,
      {
        command,
      },
    );
  const exec = EXECVP_FAILURE.exec(head);
  if (exec) return programNotStarted(head, exec[1] === NOT_FOUND ? 127 : 126, { command });
  return new PlacementError('spawn_failed', head, { command });
}

/** Bubblewrap's line for an execvp that failed, with strerror's text (bubblewrap sets no locale: English). */
const EXECVP_FAILURE = /^bwrap: execvp .*: ([^:]+)$/;
const NOT_FOUND = 'No such file or directory';
