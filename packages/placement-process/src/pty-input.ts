// The input side of a pty stream, kept in the caller's order. Stdin goes to `script` (the pty's master)
// and resizes go over the control channel (fd 5) to a loop beside the command: two paths, so a resize
// followed by input (or by the end of input) could reach the command the other way round, and a resize
// sent right after the stream opened could land after the command had read what came next. Here every
// resize is a zero-length marker chunk written through stdin itself, so it takes its place among the
// stdin chunks, and the chunk after it is passed on only once the loop has acknowledged (one byte back on
// fd 5) that `stty` set the size — by then the kernel has sent SIGWINCH to the command.
// A resize after the end of input waits for the input before it to be passed on. When the control
// channel closes (the command ended), what waits for an acknowledgement goes on.
import type { Duplex, Writable } from 'node:stream';
import { Writable as WritableStream } from 'node:stream';
import type { TerminalSize } from '@everdict/placement';
import { resizeLine } from './pty.js';

export class PtyInput {
  /** The stream's stdin as the caller sees it. */
  readonly stdin: Writable;
  private readonly acks: Array<() => void> = [];
  private readonly markers = new WeakMap<Buffer, TerminalSize>();
  private controlOpen = true;
  /** Resizes asked for after the end of input, one after another once the input was passed on. */
  private afterEnd: Promise<void>;

  constructor(
    target: Writable,
    private readonly control: Duplex,
  ) {
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

  /** Queues a resize behind the input written so far; false when the control channel is closed. */
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

  /** Sends one resize line and resolves once the loop acknowledged it (or the channel closed). */
  private apply(size: TerminalSize): Promise<void> {
    if (!this.controlOpen || this.control.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      this.acks.push(resolve);
      this.control.write(resizeLine(size));
    });
  }
}
