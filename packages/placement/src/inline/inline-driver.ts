// The inline driver: the bottom rung, in the host process itself, no isolation. What applies inline is
// exec of a registered JavaScript function (argv[0] names it), with the command's timeout, the sandbox's
// deadline and output caps; usage (wall time only); capacity (a slot count). It enforces no memory, pid
// or CPU limit and no network rule (mechanism "none"), and has no filesystem, so stream, logs, snapshot, files,
// restore and reap are `unsupported`. Only the `default` image exists here.
import { environmentOf } from '../address.js';
import { commandBudget, timeoutError, wallTimer } from '../deadline.js';
import type { Driver } from '../driver.js';
import { PlacementError, programNotStarted, unsupported } from '../errors.js';
import { Command, ExecOptions, type ExecOptionsInput, type ExecResult, type ExecStream } from '../exec.js';
import { sandboxId } from '../ids.js';
import type { Capacity, DriverDescription, ReapedSandbox, SandboxUsage } from '../observe.js';
import { CappedOutput, toBytes } from '../output.js';
import { placementOf } from '../placement-map.js';
import {
  ProvisionSpec,
  type ProvisionSpecInput,
  parseHandle,
  type SandboxHandle,
  type Snapshot,
} from '../spec.js';
import { refusedFiles, type WorkspaceFile } from '../workspace-files.js';

/** What an inline function is called with. `sandbox.state` lives as long as the sandbox (its only "workspace"). */
export interface InlineCall {
  readonly args: readonly string[];
  readonly stdin: Uint8Array;
  readonly env: Readonly<Record<string, string>>;
  /** Aborted on timeout or dispose: the function should stop (inline cancellation is cooperative). */
  readonly signal: AbortSignal;
  readonly sandbox: { readonly id: string; readonly state: Map<string, unknown> };
}

export interface InlineOutput {
  readonly exitCode?: number;
  readonly stdout?: string | Uint8Array;
  readonly stderr?: string | Uint8Array;
}

export type InlineFunction = (call: InlineCall) => InlineOutput | Promise<InlineOutput>;

export interface InlineDriverOptions {
  readonly functions: Readonly<Record<string, InlineFunction>>;
  /** Sandboxes held at once (default 64). */
  readonly slots?: number;
  readonly now?: () => number;
}

interface InlineSandbox {
  readonly handle: SandboxHandle;
  readonly state: Map<string, unknown>;
  readonly env: Readonly<Record<string, string>>;
  readonly abort: AbortController;
}

export const INLINE_DRIVER = 'inline';

export class InlineDriver implements Driver {
  private readonly sandboxes = new Map<string, InlineSandbox>();
  private readonly slots: number;
  private readonly now: () => number;

  constructor(private readonly options: InlineDriverOptions) {
    this.slots = options.slots ?? 64;
    this.now = options.now ?? Date.now;
  }

  describe(): DriverDescription {
    return {
      driver: INLINE_DRIVER,
      placement: placementOf('inline'),
      capabilities: {
        exec: true,
        stream: false,
        pty: false,
        logs: false,
        snapshot: false,
        restore: false,
        usage: true,
        reap: false,
        network: true,
        images: false,
      },
      mechanism: 'none',
    };
  }

  async provision(input: ProvisionSpecInput): Promise<SandboxHandle> {
    const spec = ProvisionSpec.parse(input);
    const id = sandboxId(INLINE_DRIVER, spec.labels);
    const existing = this.sandboxes.get(id);
    if (existing) return existing.handle;
    if (spec.image !== 'default') {
      throw new PlacementError(
        'image_not_found',
        `the inline driver has only the "default" image, not ${spec.image}`,
        {
          image: spec.image,
        },
      );
    }
    if (spec.workspace) throw unsupported(INLINE_DRIVER, 'a workspace snapshot (it has no filesystem)');
    if (spec.directories.length > 0)
      throw unsupported(INLINE_DRIVER, 'workspace directories (it has no filesystem)');
    if (this.sandboxes.size >= this.slots) {
      throw new PlacementError('capacity', `all ${this.slots} inline slots are taken`, { slots: this.slots });
    }
    const createdAtMs = this.now();
    const handle: SandboxHandle = {
      id,
      driver: INLINE_DRIVER,
      labels: spec.labels,
      environment: environmentOf(INLINE_DRIVER, 'default', null),
      limits: spec.limits,
      network: spec.network,
      createdAtMs,
      deadlineMs: createdAtMs + spec.limits.wallTimeoutMs,
    };
    this.sandboxes.set(id, { handle, state: new Map(), env: spec.env, abort: new AbortController() });
    return handle;
  }

  private held(input: SandboxHandle): InlineSandbox {
    const handle = parseHandle(input);
    const box = this.sandboxes.get(handle.id);
    if (!box) throw new PlacementError('gone', `sandbox ${handle.id} does not exist`, { id: handle.id });
    return box;
  }

  async exec(handle: SandboxHandle, cmd: Command, input: ExecOptionsInput = {}): Promise<ExecResult> {
    const argv = Command.parse(cmd);
    const opts = ExecOptions.parse(input);
    const box = this.held(handle);
    const fn = this.options.functions[argv[0]!];
    if (!fn) throw programNotStarted(`no inline function named ${argv[0]}`, 127, { command: argv[0] });
    const budget = commandBudget(box.handle, opts.timeoutMs, this.now());
    const startedAtMs = this.now();
    const abort = new AbortController();
    const onDispose = () => abort.abort();
    box.abort.signal.addEventListener('abort', onDispose);
    let timer: { clear(): void } | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = wallTimer(budget.ms, () => {
        abort.abort();
        reject(timeoutError(budget));
      });
    });
    const disposed = new Promise<never>((_, reject) => {
      abort.signal.addEventListener('abort', () => {
        if (box.abort.signal.aborted) reject(new PlacementError('gone', `sandbox ${handle.id} was disposed`));
      });
    });
    const call: InlineCall = {
      args: argv.slice(1),
      stdin: toBytes(opts.stdin),
      env: { ...box.env, ...opts.env },
      signal: abort.signal,
      sandbox: { id: box.handle.id, state: box.state },
    };
    let output: InlineOutput;
    try {
      output = await Promise.race([
        Promise.resolve()
          .then(() => fn(call))
          .catch((e: unknown) => ({ exitCode: 1, stderr: `${(e as Error)?.stack ?? String(e)}\n` })),
        timedOut,
        disposed,
      ]);
    } finally {
      timer?.clear();
      box.abort.signal.removeEventListener('abort', onDispose);
    }
    const stdout = new CappedOutput(opts.outputCapBytes);
    const stderr = new CappedOutput(opts.outputCapBytes);
    stdout.push(toBytes(output.stdout));
    stderr.push(toBytes(output.stderr));
    const endedAtMs = this.now();
    const result: ExecResult = {
      exitCode: output.exitCode ?? 0,
      signal: null,
      stdout: stdout.bytes(),
      stderr: stderr.bytes(),
      truncated: stdout.truncated || stderr.truncated,
      timing: { startedAtMs, endedAtMs, wallMs: endedAtMs - startedAtMs },
    };
    if (result.truncated && opts.onOutputCap === 'kill') {
      throw new PlacementError('output_capped', `output passed the ${opts.outputCapBytes}-byte cap`, {
        result,
      });
    }
    return result;
  }

  async stream(): Promise<ExecStream> {
    throw unsupported(INLINE_DRIVER, 'stream');
  }

  logs(): AsyncIterable<Uint8Array> {
    throw unsupported(INLINE_DRIVER, 'logs');
  }

  files(): AsyncIterable<WorkspaceFile> {
    return refusedFiles(() => unsupported(INLINE_DRIVER, 'files'));
  }

  async snapshot(): Promise<Snapshot> {
    throw unsupported(INLINE_DRIVER, 'snapshot');
  }

  async restore(): Promise<void> {
    throw unsupported(INLINE_DRIVER, 'restore');
  }

  async usage(handle: SandboxHandle): Promise<SandboxUsage> {
    const box = this.held(handle);
    return {
      cpuTimeMs: null,
      peakMemoryBytes: null,
      wallTimeMs: Math.max(0, this.now() - box.handle.createdAtMs),
      mechanism: 'none',
    };
  }

  async dispose(input: SandboxHandle): Promise<void> {
    const handle = parseHandle(input);
    const box = this.sandboxes.get(handle.id);
    if (!box) return;
    this.sandboxes.delete(handle.id);
    box.abort.abort();
  }

  async reap(_selector: { labels: Partial<SandboxHandle['labels']> }): Promise<ReapedSandbox[]> {
    throw unsupported(INLINE_DRIVER, 'reap (inline sandboxes die with their process)');
  }

  async capacity(): Promise<Capacity> {
    return { slotsTotal: this.slots, slotsFree: this.slots - this.sandboxes.size, mechanism: 'none' };
  }
}
