// A sandbox's log: everything its commands print to stdout and stderr, appended in arrival order to
// <stateDir>/logs/<id>.log up to a cap. Readers get the file from the start; followers are woken on each
// append and released when the sandbox is disposed (or their signal aborts).
import { EventEmitter, on } from 'node:events';
import { appendFileSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';

export class SandboxLog {
  private readonly events = new EventEmitter();
  private written = 0;
  private capped = false;
  private closed = false;
  private tried = false;

  constructor(
    readonly path: string,
    private readonly cap: number,
    /**
     * The file may exist already (an adopted sandbox: another instance wrote it): its bytes count against
     * the cap, and past the cap it has the note already.
     */
    existing = false,
  ) {
    this.events.setMaxListeners(0);
    if (existing) {
      try {
        this.written = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
      } catch {
        // unreadable: appends fail the same way (append)
      }
      this.capped = this.written > cap;
    }
  }

  /** Whether anything was (or was tried to be) appended by this process. */
  get touched(): boolean {
    return this.tried;
  }

  append(chunk: Uint8Array): void {
    if (this.capped || this.closed) return;
    this.tried = true;
    const room = Math.max(0, this.cap - this.written);
    const part = chunk.byteLength <= room ? chunk : chunk.subarray(0, room);
    try {
      appendFileSync(this.path, part);
      this.written += part.byteLength;
      if (part.byteLength < chunk.byteLength) {
        appendFileSync(this.path, `\n[everdict: log capped at ${this.cap} bytes]\n`);
        this.capped = true;
      }
    } catch {
      return; // the sandbox is being removed
    }
    this.events.emit('append');
  }

  /** Ends every follower (dispose). */
  close(): void {
    this.closed = true;
    this.events.emit('close');
  }

  async *read(follow: boolean, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    let offset = 0;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort);
    this.events.once('close', onAbort);
    const wakeups = follow && !this.closed ? on(this.events, 'append', { signal: stop.signal }) : null;
    try {
      for (;;) {
        const fresh = await this.readFrom(offset);
        if (fresh.byteLength > 0) {
          offset += fresh.byteLength;
          yield fresh;
        }
        if (!wakeups || stop.signal.aborted) return;
        try {
          await wakeups.next();
        } catch {
          // aborted: one last read below, then done
          const last = await this.readFrom(offset);
          if (last.byteLength > 0) yield last;
          return;
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.events.off('close', onAbort);
      await wakeups?.return?.();
    }
  }

  private async readFrom(offset: number): Promise<Uint8Array> {
    let fh: Awaited<ReturnType<typeof open>> | undefined;
    try {
      fh = await open(this.path, 'r');
      const { size } = await fh.stat();
      if (size <= offset) return new Uint8Array(0);
      const buf = Buffer.alloc(size - offset);
      const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
      return new Uint8Array(buf.subarray(0, bytesRead));
    } catch {
      return new Uint8Array(0);
    } finally {
      await fh?.close();
    }
  }
}
