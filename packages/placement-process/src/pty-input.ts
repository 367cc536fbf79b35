// The input side of a pty stream, kept in the caller's order. Stdin goes to `script` (the pty's master)
// and resizes go over the control channel (fd 5) to a loop beside the command: two paths, so a resize
// followed by input (or by the end of input) could reach the command the other way round, and a resize
// sent right after the stream opened could land after the command had read what came next. Here every
// resize is a zero-length marker chunk written through stdin itself, so it takes its place among the
// stdin chunks, and the chunk after it is passed on only once the loop has acknowledged (one byte back on
// fd 5) that `stty` set the size — by then the kernel has sent SIGWINCH to the command.
// A resize after the end of input waits for the input before it to be passed on. When the control
// channel closes (the command ended), what waits for an acknowledgement goes on.
// The wait is bounded: the loop can die while fd 5 stays open (`script`, its parent, holds it too), and
// then no acknowledgement and no close ever come. After `ackTimeoutMs` without one, the loop is taken as
// gone: the resize is given up (a `timeout` PlacementError to `onResizeFailed`, also kept as `failure`),
// what waits goes on, and every later `resize` answers false — a late byte could no longer be told apart
// from the acknowledgement of the next resize, so the channel is not trusted again.
import type { Duplex, Writable } from 'node:stream';
import { Writable as WritableStream } from 'node:stream';
import { PlacementError, type TerminalSize } from '@everdict/placement';
import { resizeLine } from './pty.js';

/** How long a resize waits for the loop's acknowledgement before the loop is taken as gone. */
export const RESIZE_ACK_TIMEOUT_MS = 5_000;

export interface PtyInputOptions {
  /** Default RESIZE_ACK_TIMEOUT_MS. */
  ackTimeoutMs?: number;
  /** Called once, when a resize was not acknowledged in time (the resizes stop; the input goes on). */
  onResizeFailed?: (error: PlacementError) => void;
}

export class PtyInput {
  /** The stream's stdin as the caller sees it. */
  readonly stdin: Writable;
  /** Set when a resize was not acknowledged in time: resizes stopped there. */
  failure: PlacementError | null = null;
  private readonly acks: Array<() => void> = [];
  private readonly markers = new WeakMap<Buffer, TerminalSize>();
  private controlOpen = true;
  /** Resizes asked for after the end of input, one after another once the input was passed on. */
  private afterEnd: Promise<void>;
  private readonly ackTimeoutMs: number;

  constructor(
    target: Writable,
    private readonly control: Duplex,
    private readonly options: PtyInputOptions = {},
  ) {
    this.ackTimeoutMs = options.ackTimeoutMs ?? RESIZE_ACK_TIMEOUT_MS;
    control.on('data', (chunk: Buffer) => {
      for (let i = 0; i < chunk.length; i++) this.acks.shift()?.();
    });
    const closed = () => {
      this.controlOpen = false;
      for (const ack of this.acks.splice(0)) ack();
    };
    control.once('end', closed);
    control.once('close', closed);
    this.stdin = new WritableStream({
      write: (chunk: Buffer, _encoding, callback) => {
        const size = this.markers.get(chunk);
        if (size) {
          void this.apply(size).then(() => callback());
          return;
        }
        // write errors (EPIPE: the command does not read its stdin) are ignored, as on a plain stream
        target.write(chunk, () => callback());
      },
      final: (callback) => {
        target.end();
        callback();
      },
      destroy: (error, callback) => {
        target.destroy();
        callback(error);
      },
    });
    const inputDone = new Promise<void>((resolve) => {
      this.stdin.once('finish', resolve);
      this.stdin.once('close', resolve);
    });
    this.afterEnd = inputDone;
  }

  /** Queues a resize behind the input written so far; false when the control channel is closed or the loop
   * stopped acknowledging (`failure`). */
  resize(size: TerminalSize): boolean {
    if (!this.controlOpen || this.control.destroyed) return false;
    if (this.stdin.writableEnded || this.stdin.destroyed) {
      this.afterEnd = this.afterEnd.then(() => this.apply(size));
      return true;
    }
    const marker = Buffer.alloc(0);
    this.markers.set(marker, size);
    this.stdin.write(marker);
    return true;
  }

  /** Sends one resize line and resolves once the loop acknowledged it, the channel closed, or time ran out. */
  private apply(size: TerminalSize): Promise<void> {
    if (!this.controlOpen || this.control.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.unanswered(size), this.ackTimeoutMs);
      this.acks.push(() => {
        clearTimeout(timer);
        resolve();
      });
      this.control.write(resizeLine(size));
    });
  }

  /** No acknowledgement in time: the loop is gone. Stop resizing; let everything waiting go on. */
  private unanswered(size: TerminalSize): void {
    if (!this.controlOpen) return;
    this.controlOpen = false;
    this.failure = new PlacementError(
      'timeout',
      `the pty's resize loop did not acknowledge a resize within ${this.ackTimeoutMs} ms: resizes stop, input goes on`,
      { size, ackTimeoutMs: this.ackTimeoutMs },
    );
    for (const ack of this.acks.splice(0)) ack();
    this.options.onResizeFailed?.(this.failure);
  }
}
