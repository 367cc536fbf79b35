// The runner's side of session runs: a WebSocket this runner opens to `<url>/runner/v1/sessions` (outbound
// only — nothing connects to a runner), over which the control plane drives this runner's placement driver
// for held-open sandboxes: provision, exec, terminal streams, snapshot/restore (the image park), dispose,
// reap, and `held` (what it holds, for the control plane's reconciliation). Stream output is back-pressured:
// while the channel holds more than its high-water mark of unsent bytes every stream's output is paused (the
// command blocks on its full pipe), and resumed under the low-water mark — a slow control plane costs the
// runner a bounded buffer, and no byte is dropped. The channel reconnects with
// backoff; a control plane that loses it settles the sessions lost after its lease. `stop()` disposes every
// session sandbox this process provisioned (a killed process leaves them to the next start's reap).

import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import {
  ControlFrame,
  type Driver,
  decodeBytes,
  type ExecStream,
  encodeBytes,
  isPlacementError,
  MAX_FRAME_BYTES,
  type ChannelProblem as Problem,
  parseHandle,
  parseStreamFrame,
  type RunnerFrame,
  type SessionOp,
  Snapshot,
  STDERR,
  STDIN,
  STDOUT,
  streamFrame,
} from '@everdict/placement';
import WebSocket from 'ws';
import { ZodError, z } from 'zod';

export interface SessionAgentOptions {
  /** The control plane's base URL (http[s]://…). */
  readonly url: string;
  readonly credential: string;
  readonly driver: Driver;
  /** The images this runner offers sessions in (`*`: any). */
  readonly images: readonly string[];
  readonly slots: number;
  /** First reconnect delay (default 500 ms; doubles to 10 s). */
  readonly reconnectMs?: number;
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
  /** Unsent channel bytes above which stream output is paused (default 1 MiB). */
  readonly outputHighWaterBytes?: number;
  /** Unsent channel bytes under which paused stream output resumes (default 256 KiB). */
  readonly outputLowWaterBytes?: number;
}

const OUTPUT_HIGH_WATER = 1024 * 1024;
const OUTPUT_LOW_WATER = 256 * 1024;

const SESSION_KIND = 'sandbox';
const Args = {
  provision: z.object({
    spec: z.object({ labels: z.object({ kind: z.literal(SESSION_KIND) }).passthrough() }).passthrough(),
  }),
  exec: z.object({
    handle: z.unknown(),
    cmd: z.array(z.string()).min(1),
    options: z.record(z.string(), z.unknown()).optional(),
  }),
  stream: z.object({
    handle: z.unknown(),
    cmd: z.array(z.string()).min(1),
    options: z.record(z.string(), z.unknown()).optional(),
    sid: z.int().nonnegative(),
  }),
  handle: z.object({ handle: z.unknown() }),
  restore: z.object({ handle: z.unknown(), snapshot: Snapshot }),
  reap: z.object({ labels: z.object({ kind: z.literal(SESSION_KIND) }).passthrough() }),
};

function problemOf(e: unknown): Problem {
  if (isPlacementError(e))
    return { code: e.code, message: e.message, detail: encodeBytes(e.detail) as Record<string, unknown> };
  if (e instanceof ZodError) return { code: 'bad_request', message: e.message.slice(0, 2000), detail: {} };
  return { code: 'internal', message: e instanceof Error ? e.message : String(e), detail: {} };
}

export class SessionAgent {
  readonly #o: SessionAgentOptions;
  /** Session sandboxes this process provisioned (by handle id) and when. */
  readonly #held = new Map<string, { handle: ReturnType<typeof parseHandle>; since: number }>();
  readonly #streams = new Map<number, ExecStream>();
  #ws: WebSocket | null = null;
  #stopped = false;
  #delay: number;
  #timer: NodeJS.Timeout | undefined;
  /** Whether stream output is paused: the channel holds more than the high-water mark unsent. */
  #throttled = false;
  /** The piped outputs (those `#pipe` reads) paused for it. */
  readonly #paused = new Set<Readable>();
  /** The stream ids whose output `#pipe` reads. */
  readonly #piped = new Set<number>();
  /** Resolves each time the channel is open and the hello sent (tests and logs). */
  connected = 0;

  constructor(options: SessionAgentOptions) {
    this.#o = options;
    this.#delay = options.reconnectMs ?? 500;
  }

  /** Bytes the channel holds unsent (its socket's buffer); bounded by the output high-water mark plus a chunk. */
  get channelBuffered(): number {
    return this.#ws?.bufferedAmount ?? 0;
  }

  /** Whether stream output is paused for the channel's back-pressure. */
  get outputPaused(): boolean {
    return this.#throttled;
  }

  get held(): readonly string[] {
    return [...this.#held.values()].map((h) => h.handle.labels.runId);
  }

  start(): void {
    this.#stopped = false;
    this.#connect();
  }

  #log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void {
    this.#o.log?.(level, msg, fields);
  }

  #connect(): void {
    if (this.#stopped) return;
    const url = `${this.#o.url.replace(/^http/, 'ws').replace(/\/+$/, '')}/runner/v1/sessions`;
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.#o.credential}` },
      maxPayload: MAX_FRAME_BYTES,
    });
    this.#ws = ws;
    ws.on('open', () => {
      this.#delay = this.#o.reconnectMs ?? 500;
      this.#send({
        t: 'hello',
        description: this.#o.driver.describe(),
        images: [...this.#o.images],
        slots: this.#o.slots,
      });
      this.connected += 1;
      this.#log('info', 'session channel open', { url });
    });
    ws.on('message', (data, isBinary) => this.#frame(data as Buffer | Buffer[], isBinary));
    ws.on('unexpected-response', (_req, res) => {
      this.#log('warn', 'session channel refused', { status: res.statusCode });
      ws.terminate();
    });
    ws.on('error', (err) => this.#log('warn', 'session channel error', { err: String(err) }));
    ws.on('close', (code, reason) => {
      if (this.#ws === ws) this.#ws = null;
      if (!this.#stopped)
        this.#log('warn', 'session channel closed; reconnecting', { code, reason: String(reason) });
      this.#throttle(false); // output held back drains (nowhere): the streams end and their pipes settle
      for (const s of this.#streams.values()) s.kill();
      this.#streams.clear();
      if (this.#stopped) return;
      this.#timer = setTimeout(() => this.#connect(), this.#delay);
      this.#delay = Math.min(this.#delay * 2, 10_000);
    });
  }

  #send(frame: RunnerFrame): void {
    const ws = this.#ws;
    if (ws?.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  }

  #frame(data: Buffer | Buffer[], isBinary: boolean): void {
    const buf = Array.isArray(data) ? Buffer.concat(data) : data;
    if (isBinary) {
      const f = parseStreamFrame(buf);
      if (f?.kind === STDIN) this.#streams.get(f.sid)?.stdin.write(f.bytes);
      return;
    }
    let frame: ControlFrame;
    try {
      frame = ControlFrame.parse(JSON.parse(buf.toString('utf8')));
    } catch (err) {
      this.#log('warn', 'session channel: a frame that does not parse', { err: String(err) });
      return;
    }
    switch (frame.t) {
      case 'call':
        void this.#call(frame.id, frame.op, decodeBytes(frame.args));
        return;
      case 'resize':
        this.#streams.get(frame.sid)?.resize({ cols: frame.cols, rows: frame.rows });
        return;
      case 'eof':
        this.#streams.get(frame.sid)?.stdin.end();
        return;
      case 'kill':
        this.#streams.get(frame.sid)?.kill();
        return;
    }
  }

  async #call(id: string, op: SessionOp, args: unknown): Promise<void> {
    try {
      const value = await this.#op(op, args);
      this.#send({ t: 'result', id, ok: true, value: encodeBytes(value ?? null) });
      if (op === 'stream') this.#pipe(Args.stream.parse(args).sid);
    } catch (e) {
      this.#send({ t: 'result', id, ok: false, error: problemOf(e) });
    }
  }

  async #op(op: SessionOp, raw: unknown): Promise<unknown> {
    const { driver } = this.#o;
    switch (op) {
      case 'provision': {
        const handle = await driver.provision(Args.provision.parse(raw).spec as never);
        if (!this.#held.has(handle.id)) this.#held.set(handle.id, { handle, since: Date.now() });
        return handle;
      }
      case 'exec': {
        const a = Args.exec.parse(raw);
        return driver.exec(parseHandle(a.handle), a.cmd, (a.options ?? {}) as never);
      }
      case 'stream': {
        const a = Args.stream.parse(raw);
        const s = await driver.stream(parseHandle(a.handle), a.cmd, (a.options ?? {}) as never);
        this.#streams.set(a.sid, s);
        return { pty: s.pty };
      }
      case 'snapshot':
        return driver.snapshot(parseHandle(Args.handle.parse(raw).handle));
      case 'restore': {
        const a = Args.restore.parse(raw);
        await driver.restore(parseHandle(a.handle), a.snapshot);
        return null;
      }
      case 'dispose': {
        const handle = parseHandle(Args.handle.parse(raw).handle);
        await driver.dispose(handle);
        this.#held.delete(handle.id);
        return null;
      }
      case 'reap':
        return driver.reap({ labels: Args.reap.parse(raw).labels as never });
      case 'held': {
        const now = Date.now();
        return [...this.#held.values()].map((h) => ({ handle: h.handle, ageMs: now - h.since }));
      }
    }
  }

  /**
   * A stream's output to the channel (after its `result`), then its exit — once both outputs have ended, so
   * no output (held back by a pause) follows it. Each frame sent past the high-water mark pauses every
   * stream's output; the send that leaves the channel under the low-water mark resumes it.
   */
  #pipe(sid: number): void {
    const s = this.#streams.get(sid);
    if (!s) return;
    this.#piped.add(sid);
    const out = (kind: number) => (chunk: Buffer) => {
      const ws = this.#ws;
      if (ws?.readyState !== WebSocket.OPEN) return; // the channel closed: the stream is killed with it
      ws.send(streamFrame(kind, sid, chunk), { binary: true }, () => this.#sent(ws));
      if (ws.bufferedAmount >= (this.#o.outputHighWaterBytes ?? OUTPUT_HIGH_WATER)) this.#throttle(true);
    };
    s.stdout.on('data', out(STDOUT));
    s.stderr.on('data', out(STDERR));
    if (this.#throttled) for (const r of [s.stdout, s.stderr]) this.#pause(r);
    s.stdin.on('error', () => undefined);
    const ended = (r: Readable) => finished(r).catch(() => undefined);
    s.exit
      .then(
        async (x) => {
          await Promise.all([ended(s.stdout), ended(s.stderr)]);
          this.#send({ t: 'exit', sid, exitCode: x.exitCode, signal: x.signal });
        },
        async (e: unknown) => {
          await Promise.all([ended(s.stdout), ended(s.stderr)]);
          this.#send({ t: 'exit', sid, error: problemOf(e) });
        },
      )
      .finally(() => {
        this.#streams.delete(sid);
        this.#piped.delete(sid);
        this.#paused.delete(s.stdout);
        this.#paused.delete(s.stderr);
      });
  }

  /** A frame left the channel's buffer: under the low-water mark, paused output resumes. */
  #sent(ws: WebSocket): void {
    if (!this.#throttled || ws !== this.#ws) return;
    if (ws.bufferedAmount <= (this.#o.outputLowWaterBytes ?? OUTPUT_LOW_WATER)) this.#throttle(false);
  }

  /** Pauses every piped stream's output, or resumes what was paused. */
  #throttle(pause: boolean): void {
    this.#throttled = pause;
    if (pause) {
      for (const [sid, s] of this.#streams)
        if (this.#piped.has(sid)) for (const r of [s.stdout, s.stderr]) this.#pause(r);
      return;
    }
    for (const r of this.#paused) r.resume();
    this.#paused.clear();
  }

  #pause(r: Readable): void {
    r.pause();
    this.#paused.add(r);
  }

  /** Stop reconnecting, close the channel, dispose every session sandbox this process provisioned. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const s of this.#streams.values()) s.kill();
    this.#ws?.close(1001, 'runner stopping');
    const held = [...this.#held.values()];
    this.#held.clear();
    await Promise.all(held.map((h) => this.#o.driver.dispose(h.handle).catch(() => undefined)));
  }
}
