// One runner's session channel, as the control plane holds it: calls (each answered by a `result` frame of
// the same id, or refused when the channel closes or the call outlives its timeout) and terminal streams
// (binary frames by stream id; see wire.ts). A closed channel refuses everything with `spawn_failed`
// (503 sandbox_unavailable): the runner's sandboxes may still be alive — the lease rule decides they are lost.
import { PassThrough, Writable } from 'node:stream';
import {
  type ControlFrame,
  type DriverDescription,
  decodeBytes,
  type ExecStream,
  encodeBytes,
  PLACEMENT_ERROR_CODES,
  PlacementError,
  type PlacementErrorCode,
  type ChannelProblem as Problem,
  parseStreamFrame,
  RunnerFrame,
  type SessionOp,
  STDERR,
  STDIN,
  STDOUT,
  type StreamExit,
  streamFrame,
  type TerminalSize,
} from '@everdict/placement';
import type { WebSocket } from 'ws';
import { endStreams } from './stream-exit.js';

export interface RunnerHello {
  readonly description: DriverDescription;
  readonly images: readonly string[];
  readonly slots: number;
}

interface PendingCall {
  resolve(v: unknown): void;
  reject(e: unknown): void;
  timer: ReturnType<typeof setTimeout>;
}

interface OpenStream {
  readonly stdout: PassThrough;
  readonly stderr: PassThrough;
  settle(exit: StreamExit | PlacementError): void;
}

/** A runner's refusal as the placement error it was (a code outside the driver's list: spawn_failed). */
export function problemError(p: Problem): PlacementError {
  const detail = decodeBytes(p.detail) as Record<string, unknown>;
  if ((PLACEMENT_ERROR_CODES as readonly string[]).includes(p.code))
    return new PlacementError(p.code as PlacementErrorCode, p.message, detail);
  return new PlacementError('spawn_failed', p.message, { ...detail, reason: p.code });
}

export class RunnerChannel {
  readonly #calls = new Map<string, PendingCall>();
  readonly #streams = new Map<number, OpenStream>();
  #seq = 0;
  #closed = false;
  readonly closed: Promise<void>;

  constructor(
    readonly runnerId: string,
    readonly hello: RunnerHello,
    private readonly ws: WebSocket,
    private readonly onError: (e: unknown) => void = () => undefined,
  ) {
    this.closed = new Promise((resolve) => {
      ws.on('close', () => {
        this.#shut();
        resolve();
      });
    });
    ws.on('error', (e) => this.onError(e));
    ws.on('message', (data, isBinary) => this.#frame(data as Buffer | Buffer[], isBinary));
  }

  get isOpen(): boolean {
    return !this.#closed && this.ws.readyState === this.ws.OPEN;
  }

  #lost(what: string): PlacementError {
    return new PlacementError('spawn_failed', `runner ${this.runnerId}: ${what}`, {
      runnerId: this.runnerId,
      reason: 'runner_unreachable',
    });
  }

  #send(frame: ControlFrame): void {
    if (!this.isOpen) throw this.#lost('the session channel is closed');
    this.ws.send(JSON.stringify(frame));
  }

  /** One operation on the runner's driver; bytes in `args` and in the answer travel as `{$bytes}`. */
  call(op: SessionOp, args: unknown, timeoutMs: number): Promise<unknown> {
    const id = `c${++this.#seq}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#calls.delete(id);
        reject(this.#lost(`${op} got no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#calls.set(id, { resolve, reject, timer });
      try {
        this.#send({ t: 'call', id, op, args: encodeBytes(args) });
      } catch (e) {
        clearTimeout(timer);
        this.#calls.delete(id);
        reject(e);
      }
    });
  }

  /** A live command in one of the runner's sandboxes (a terminal): see ExecStream. */
  async stream(args: { handle: unknown; cmd: readonly string[]; options: unknown }): Promise<ExecStream> {
    const sid = ++this.#seq;
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let settle!: OpenStream['settle'];
    const exit = new Promise<StreamExit>((resolve, reject) => {
      settle = (x) => {
        this.#streams.delete(sid);
        endStreams(stdout, stderr, x, resolve, reject);
      };
    });
    exit.catch(() => undefined);
    this.#streams.set(sid, { stdout, stderr, settle });
    let opened: { pty?: boolean };
    try {
      opened = (await this.call('stream', { ...args, sid }, 120_000)) as { pty?: boolean };
    } catch (e) {
      this.#streams.delete(sid);
      throw e;
    }
    const control = (frame: ControlFrame) => {
      try {
        this.#send(frame);
      } catch {
        // The channel closed: the stream's exit already rejected.
      }
    };
    const ws = this.ws;
    const stdin = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        if (!this.isOpen) return cb(this.#lost('the session channel is closed'));
        ws.send(streamFrame(STDIN, sid, chunk), { binary: true }, (e) => cb(e ?? null));
      },
      final: (cb) => {
        control({ t: 'eof', sid });
        cb();
      },
    });
    stdin.on('error', () => undefined);
    const pty = opened.pty === true;
    return {
      stdin,
      stdout,
      stderr,
      pty,
      resize: (size: TerminalSize) => {
        control({ t: 'resize', sid, cols: size.cols, rows: size.rows });
        return pty;
      },
      kill: () => control({ t: 'kill', sid }),
      exit,
    };
  }

  close(code = 1001, reason = 'closing'): void {
    this.ws.close(code, reason);
    this.#shut();
  }

  #frame(data: Buffer | Buffer[], isBinary: boolean): void {
    const buf = Array.isArray(data) ? Buffer.concat(data) : data;
    if (isBinary) {
      const f = parseStreamFrame(buf);
      const s = f ? this.#streams.get(f.sid) : undefined;
      if (!f || !s) return;
      if (f.kind === STDOUT) s.stdout.write(f.bytes);
      else if (f.kind === STDERR) s.stderr.write(f.bytes);
      return;
    }
    let parsed: RunnerFrame;
    try {
      parsed = RunnerFrame.parse(JSON.parse(buf.toString('utf8')));
    } catch (e) {
      this.onError(e);
      return;
    }
    if (parsed.t === 'result') {
      const call = this.#calls.get(parsed.id);
      if (!call) return;
      this.#calls.delete(parsed.id);
      clearTimeout(call.timer);
      if (parsed.ok) call.resolve(decodeBytes(parsed.value));
      else
        call.reject(
          problemError(parsed.error ?? { code: 'internal', message: 'the runner refused', detail: {} }),
        );
    } else if (parsed.t === 'exit') {
      const s = this.#streams.get(parsed.sid);
      if (!s) return;
      s.settle(
        parsed.error
          ? problemError(parsed.error)
          : { exitCode: parsed.exitCode ?? null, signal: parsed.signal ?? null },
      );
    }
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const [id, c] of this.#calls) {
      clearTimeout(c.timer);
      c.reject(this.#lost('the session channel closed'));
      this.#calls.delete(id);
    }
    for (const s of [...this.#streams.values()]) s.settle(this.#lost('the session channel closed'));
  }
}
