// A runner's placement driver, seen from the control plane: the Driver contract over the runner's session
// channel. Each operation is one call (answers parsed with the contract's own schemas); `stream` is a
// terminal multiplexed on the channel. A runner whose channel another replica holds is reached through that
// replica (relay.ts, over PostgreSQL); one reachable nowhere refuses with `spawn_failed` (reason
// `runner_unreachable`) — never `gone`, which would mean the sandbox is known to be lost.
import {
  type Capacity,
  type Command,
  type Driver,
  type DriverDescription,
  type ExecOptionsInput,
  ExecResult,
  type ExecStream,
  PlacementError,
  ReapedSandbox,
  refusedFiles,
  SandboxHandle,
  type SandboxUsage,
  type SessionOp,
  Snapshot,
  type StreamOptionsInput,
  unsupported,
  type WorkspaceFile,
} from '@everdict/placement';
import { z } from 'zod';
import type { RunnerChannel } from './channel.js';

/** A session sandbox the runner holds, and how long it has held it (its own clock). */
export const HeldSandbox = z.object({ handle: SandboxHandle, ageMs: z.number().nonnegative() });
export type HeldSandbox = z.infer<typeof HeldSandbox>;

/** How long a call may take beyond the command's own timeout. */
const SLACK_MS = 30_000;
const SLOW_MS = 300_000;

/** A way to a runner's driver: its channel on this replica, or the relay to the replica holding it. */
export interface SessionLink {
  call(op: SessionOp, args: unknown, timeoutMs: number): Promise<unknown>;
  stream(args: { handle: unknown; cmd: readonly string[]; options: unknown }): Promise<ExecStream>;
}

export interface ChannelLookup {
  channel(runnerId: string): RunnerChannel | undefined;
  /** This replica's open channel to the runner, else the relay to its holder; refuses runner_unreachable. */
  link(runnerId: string): Promise<SessionLink>;
}

export class RemoteDriver implements Driver {
  constructor(
    private readonly channels: ChannelLookup,
    readonly runnerId: string,
  ) {}

  #ch(): RunnerChannel {
    const ch = this.channels.channel(this.runnerId);
    if (!ch?.isOpen)
      throw new PlacementError(
        'spawn_failed',
        `runner ${this.runnerId} has no session channel on this replica`,
        { runnerId: this.runnerId, reason: 'runner_unreachable' },
      );
    return ch;
  }

  #call(op: SessionOp, args: unknown, timeoutMs: number): Promise<unknown> {
    return this.channels.link(this.runnerId).then((l) => l.call(op, args, timeoutMs));
  }

  describe(): DriverDescription {
    const ch = this.channels.channel(this.runnerId);
    if (ch) return ch.hello.description;
    return {
      driver: 'runner',
      placement: { where: 'driver' },
      capabilities: {
        exec: false,
        stream: false,
        pty: false,
        logs: false,
        snapshot: false,
        restore: false,
        usage: false,
        reap: false,
        network: false,
        images: false,
      },
      mechanism: 'none',
    };
  }

  async provision(spec: unknown): Promise<SandboxHandle> {
    return SandboxHandle.parse(await this.#call('provision', { spec }, SLOW_MS));
  }

  async exec(handle: SandboxHandle, cmd: Command, options: ExecOptionsInput = {}): Promise<ExecResult> {
    const wait = (options.timeoutMs ?? 60_000) + SLACK_MS;
    return ExecResult.parse(await this.#call('exec', { handle, cmd, options }, wait));
  }

  stream(handle: SandboxHandle, cmd: Command, options: StreamOptionsInput = {}): Promise<ExecStream> {
    return this.channels.link(this.runnerId).then((l) => l.stream({ handle, cmd, options }));
  }

  // biome-ignore lint/correctness/useYield: the contract's optional operation, refused
  async *logs(): AsyncIterable<Uint8Array> {
    throw unsupported('runner', 'logs over the session channel');
  }

  async snapshot(handle: SandboxHandle): Promise<Snapshot> {
    return Snapshot.parse(await this.#call('snapshot', { handle }, SLOW_MS));
  }

  files(): AsyncIterable<WorkspaceFile> {
    // A session's files are read by what runs in it (exec, a terminal): no tar crosses the channel.
    return refusedFiles(() => unsupported('runner', 'files over the session channel'));
  }

  async restore(handle: SandboxHandle, snapshot: Snapshot): Promise<void> {
    await this.#call('restore', { handle, snapshot }, SLOW_MS);
  }

  async usage(): Promise<SandboxUsage> {
    throw unsupported('runner', 'usage over the session channel');
  }

  async dispose(handle: SandboxHandle): Promise<void> {
    await this.#call('dispose', { handle }, SLOW_MS);
  }

  async reap(selector: { labels: Record<string, string> }): Promise<ReapedSandbox[]> {
    return z.array(ReapedSandbox).parse(await this.#call('reap', selector, SLOW_MS));
  }

  async capacity(): Promise<Capacity> {
    const ch = this.#ch();
    return {
      slotsTotal: ch.hello.slots,
      slotsFree: ch.hello.slots,
      mechanism: ch.hello.description.mechanism,
    };
  }

  /** The session sandboxes the runner holds (for the holding replica's reconciliation: its own channel). */
  async held(): Promise<HeldSandbox[]> {
    return z.array(HeldSandbox).parse(await this.#ch().call('held', {}, SLOW_MS));
  }
}
