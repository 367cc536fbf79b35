// The session relay: a runner's session channel is one WebSocket held by ONE replica (session_channels.replica);
// any other replica sharing the database reaches that runner through the holder, over PostgreSQL. Frames are
// rows of `session_relay` (migration 0020) addressed to a replica, inserted with a NOTIFY on RELAY_CHANNEL
// whose payload names the addressee (delivered at commit); the addressee deletes its rows in id order and
// dispatches them by conversation (a correlation id). A poll covers a lost LISTEN connection.
//
//   requester → holder:  call {runnerId, op, args, timeoutMs} · open {runnerId, args} · in · eof · resize · kill
//   holder → requester:  result {ok, value | error} · opened {pty} · out · err · exit {exitCode, signal | error}
//   both ways:           ack {bytes}: data consumed (flow control) · alive: the peer is still there
//
// Every conversation's frames travel one serial queue per addressee (a batch per INSERT), so they arrive in
// the order sent; a per-conversation sequence number restores that order should a drain see them otherwise.
// A terminal's data is windowed: a sender stops (pauses the source, or holds the stdin write) once WINDOW
// bytes are unacknowledged, so neither the table nor the receiver's memory grows without bound. A peer silent
// for `deadMs` (no frame, not even `alive`) is gone: the call or stream fails with `spawn_failed`, reason
// `runner_unreachable` (503 sandbox_unavailable), and nothing was changed by this side. Rows addressed to a
// replica that died are deleted by any replica's sweep once older than `staleMs`.
import { randomBytes } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import {
  decodeBytes,
  type ExecStream,
  encodeBytes,
  PlacementError,
  type SessionOp,
  type StreamExit,
  type TerminalSize,
} from '@everdict/placement';
import { sql } from 'kysely';
import type { z } from 'zod';
import type { Deps } from '../../services/context.js';
import { problemError, type RunnerChannel } from './channel.js';
import {
  AckFrame,
  CallFrame,
  ExitFrame,
  jsonBody,
  type Kind,
  OpenFrame,
  parseBody,
  problemOf,
  ResizeFrame,
  ResultFrame,
} from './relay-frames.js';
import { Consumed, Window } from './relay-window.js';
import { endStreams } from './stream-exit.js';

export const RELAY_CHANNEL = 'everdict_session_relay';

export interface RelayOptions {
  /** How often a drain runs without a NOTIFY (default 1000 ms). */
  readonly pollMs?: number;
  /** An idle conversation sends `alive` this often (default 1000 ms). */
  readonly aliveMs?: number;
  /** A peer silent this long is gone (default 10 s). */
  readonly deadMs?: number;
  /** Rows older than this are addressed to a dead replica: swept (default 60 s). */
  readonly staleMs?: number;
  /** Unacknowledged terminal bytes a sender may have in flight, per direction (default 1 MiB). */
  readonly windowBytes?: number;
}

/** The transport a link sees: this replica's local channel for a runner, if it holds it. */
export interface LocalChannels {
  channel(runnerId: string): RunnerChannel | undefined;
}

interface Row {
  from_replica: string;
  conv: string;
  seq: number;
  kind: string;
  body: Buffer;
}

interface Conversation {
  readonly peer: string;
  readonly runnerId: string;
  lastHeard: number;
  lastSent: number;
  nextIn: number;
  readonly early: Map<number, Row>;
  nextOut: number;
  onFrame(kind: Kind, body: Buffer): void;
  fail(e: PlacementError): void;
}

interface Outgoing {
  conv: string;
  seq: number;
  kind: Kind;
  body: Buffer;
  resolve(): void;
  reject(e: unknown): void;
}

export class SessionRelay {
  readonly #convs = new Map<string, Conversation>();
  readonly #queues = new Map<string, { frames: Outgoing[]; flushing: boolean }>();
  #seq = 0;
  #draining: Promise<void> | null = null;
  #again = false;
  #timers: ReturnType<typeof setInterval>[] = [];
  #unlisten: (() => Promise<void>) | null = null;
  #closed = false;
  readonly #aliveMs: number;
  readonly #deadMs: number;
  readonly #window: number;

  constructor(
    private readonly deps: Deps,
    readonly replica: string,
    private readonly local: LocalChannels,
    private readonly opts: RelayOptions = {},
    private readonly warn: (e: unknown) => void = () => undefined,
  ) {
    this.#aliveMs = opts.aliveMs ?? 1000;
    this.#deadMs = opts.deadMs ?? 10_000;
    this.#window = opts.windowBytes ?? 1024 * 1024;
  }

  async start(): Promise<void> {
    try {
      this.#unlisten = await this.deps.ldb.listen(RELAY_CHANNEL, (to) => {
        if (to === this.replica) this.drain();
      });
    } catch (e) {
      this.warn(e); // the poll below still drains
    }
    const every = (ms: number, fn: () => void) => {
      const t = setInterval(fn, ms);
      t.unref?.();
      this.#timers.push(t);
    };
    every(this.opts.pollMs ?? 1000, () => this.drain());
    every(this.#aliveMs, () => this.#heartbeat());
    const staleMs = this.opts.staleMs ?? 60_000;
    every(Math.max(1000, Math.floor(staleMs / 2)), () => void this.sweep(staleMs).catch(this.warn));
    this.drain();
  }

  /** Conversations open on this replica (for tests and metrics). */
  get open(): number {
    return this.#convs.size;
  }

  #lost(runnerId: string, peer: string, what: string): PlacementError {
    return new PlacementError('spawn_failed', `runner ${runnerId} via replica ${peer}: ${what}`, {
      runnerId,
      replica: peer,
      reason: 'runner_unreachable',
    });
  }

  // ——— transport ———

  #send(c: Conversation, conv: string, kind: Kind, body: Buffer): Promise<void> {
    c.lastSent = Date.now();
    const seq = c.nextOut++;
    return new Promise((resolve, reject) => {
      let q = this.#queues.get(c.peer);
      if (!q) {
        q = { frames: [], flushing: false };
        this.#queues.set(c.peer, q);
      }
      q.frames.push({ conv, seq, kind, body, resolve, reject });
      if (!q.flushing) void this.#flush(c.peer, q);
    });
  }

  async #flush(to: string, q: { frames: Outgoing[]; flushing: boolean }): Promise<void> {
    q.flushing = true;
    try {
      while (q.frames.length > 0) {
        // One INSERT per batch (bounded), the NOTIFY in the same statement: delivered at its commit.
        let bytes = 0;
        let n = 0;
        while (n < q.frames.length && n < 500 && bytes < 8 * 1024 * 1024) {
          bytes += q.frames[n]?.body.length ?? 0;
          n += 1;
        }
        const batch = q.frames.splice(0, n);
        try {
          await sql`WITH ins AS (
              INSERT INTO session_relay (to_replica, from_replica, conv, seq, kind, body)
              VALUES ${sql.join(batch.map((f) => sql`(${to}, ${this.replica}, ${f.conv}, ${f.seq}, ${f.kind}, ${f.body})`))}
              RETURNING 1)
            SELECT pg_notify(${RELAY_CHANNEL}, ${to}) FROM (SELECT 1 FROM ins LIMIT 1) x`.execute(
            this.deps.db,
          );
          for (const f of batch) f.resolve();
        } catch (e) {
          // A frame that could not be written breaks its conversation's order: the conversation fails whole.
          for (const f of batch) {
            f.reject(e);
            const c = this.#convs.get(f.conv);
            c?.fail(this.#lost(c.runnerId, c.peer, `the relay could not be written: ${String(e)}`));
          }
        }
      }
    } finally {
      q.flushing = false;
    }
  }

  /** Reads and dispatches every frame addressed to this replica (coalesced: one drain at a time). */
  drain(): void {
    if (this.#closed) return;
    if (this.#draining) {
      this.#again = true;
      return;
    }
    this.#draining = (async () => {
      do {
        this.#again = false;
        const { rows } = await sql<Row>`WITH d AS (
            DELETE FROM session_relay WHERE to_replica = ${this.replica}
            RETURNING id, from_replica, conv, seq, kind, body)
          SELECT from_replica, conv, seq, kind, body FROM d ORDER BY id`.execute(this.deps.db);
        for (const r of rows) this.#receive(r);
      } while (this.#again && !this.#closed);
    })()
      .catch(this.warn)
      .finally(() => {
        this.#draining = null;
      });
  }

  #receive(r: Row): void {
    const c = this.#convs.get(r.conv);
    if (!c) {
      // A new conversation: this replica is the holder being asked.
      if (r.kind === 'call' || r.kind === 'open') this.#serve(r);
      return;
    }
    c.lastHeard = Date.now();
    if (r.seq !== c.nextIn) {
      if (r.seq > c.nextIn) c.early.set(r.seq, r);
      return;
    }
    let next: Row | undefined = r;
    while (next) {
      c.nextIn += 1;
      try {
        c.onFrame(next.kind as Kind, next.body);
      } catch (e) {
        this.warn(e);
      }
      next = c.early.get(c.nextIn);
      if (next) c.early.delete(c.nextIn);
    }
  }

  #heartbeat(): void {
    const now = Date.now();
    for (const [conv, c] of this.#convs) {
      if (now - c.lastHeard > this.#deadMs) {
        c.fail(this.#lost(c.runnerId, c.peer, `no frame from the relaying replica for ${this.#deadMs} ms`));
        continue;
      }
      if (now - c.lastSent >= this.#aliveMs)
        void this.#send(c, conv, 'alive', Buffer.alloc(0)).catch(() => undefined);
    }
  }

  /** Deletes frames older than `staleMs` (addressed to a replica that died mid-relay). */
  async sweep(staleMs = this.opts.staleMs ?? 60_000): Promise<number> {
    const { rows } = await sql<{ n: string }>`WITH d AS (
        DELETE FROM session_relay WHERE created_at < now() - make_interval(secs => ${staleMs / 1000}::float8)
        RETURNING 1) SELECT count(*)::text AS n FROM d`.execute(this.deps.db);
    return Number(rows[0]?.n ?? 0);
  }

  #conversation(
    conv: string,
    peer: string,
    runnerId: string,
    handlers: Pick<Conversation, 'onFrame' | 'fail'>,
    seqStart = 0,
  ): Conversation {
    const now = Date.now();
    const c: Conversation = {
      peer,
      runnerId,
      lastHeard: now,
      lastSent: now,
      nextIn: seqStart,
      early: new Map(),
      nextOut: 0,
      ...handlers,
    };
    this.#convs.set(conv, c);
    return c;
  }

  #newConv(): string {
    return `${this.replica}:${++this.#seq}:${randomBytes(4).toString('hex')}`;
  }

  // ——— requester side ———

  /** One driver operation on `runnerId`, whose channel `holder` holds. */
  call(holder: string, runnerId: string, op: SessionOp, args: unknown, timeoutMs: number): Promise<unknown> {
    const conv = this.#newConv();
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.#convs.delete(conv);
      };
      const timer = setTimeout(() => {
        done();
        reject(this.#lost(runnerId, holder, `${op} got no answer within ${timeoutMs} ms`));
      }, timeoutMs + this.#deadMs);
      const c = this.#conversation(conv, holder, runnerId, {
        onFrame: (kind, body) => {
          if (kind !== 'result') return;
          done();
          const r = parseBody(ResultFrame, body);
          if (r.ok) resolve(decodeBytes(r.value));
          else
            reject(problemError(r.error ?? { code: 'internal', message: 'the holder refused', detail: {} }));
        },
        fail: (e) => {
          done();
          reject(e);
        },
      });
      this.#send(c, conv, 'call', jsonBody({ runnerId, op, args: encodeBytes(args), timeoutMs })).catch(
        (e: unknown) => {
          done();
          reject(this.#lost(runnerId, holder, `the relay could not be written: ${String(e)}`));
        },
      );
    });
  }

  /** A terminal stream on `runnerId`'s sandbox through `holder`: the ExecStream contract, windowed. */
  stream(
    holder: string,
    runnerId: string,
    args: { handle: unknown; cmd: readonly string[]; options: unknown },
  ): Promise<ExecStream> {
    const conv = this.#newConv();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const window = new Window(this.#window);
    const consumed = new Consumed(Math.max(1, Math.floor(this.#window / 4)));
    let pty = false;
    let settled = false;
    let settleExit!: (x: StreamExit | PlacementError) => void;
    const exit = new Promise<StreamExit>((resolve, reject) => {
      settleExit = (x) => {
        if (settled) return;
        settled = true;
        this.#convs.delete(conv);
        window.release();
        endStreams(stdout, stderr, x, resolve, reject);
      };
    });
    exit.catch(() => undefined);
    let opened!: (v: boolean) => void;
    let refused!: (e: PlacementError) => void;
    const ready = new Promise<boolean>((resolve, reject) => {
      opened = resolve;
      refused = reject;
    });
    let isOpen = false;
    const deliver = (to: PassThrough, bytes: Buffer) => {
      to.write(bytes, () => {
        const ack = consumed.add(bytes.length);
        if (ack !== null && !settled)
          void this.#send(c, conv, 'ack', jsonBody({ bytes: ack })).catch(() => undefined);
      });
    };
    const c = this.#conversation(conv, holder, runnerId, {
      onFrame: (kind, body) => {
        if (kind === 'opened') {
          isOpen = true;
          opened(JSON.parse(body.toString('utf8')).pty === true);
        } else if (kind === 'out') deliver(stdout, body);
        else if (kind === 'err') deliver(stderr, body);
        else if (kind === 'ack') window.ack(parseBody(AckFrame, body).bytes);
        else if (kind === 'exit') {
          const x = parseBody(ExitFrame, body);
          const result = x.error
            ? problemError(x.error)
            : { exitCode: x.exitCode ?? null, signal: x.signal ?? null };
          if (!isOpen)
            refused(result instanceof PlacementError ? result : this.#lost(runnerId, holder, 'no stream'));
          settleExit(result);
        }
      },
      fail: (e) => {
        if (!isOpen) refused(e);
        settleExit(e);
      },
    });
    const control = (kind: Kind, body: Buffer = Buffer.alloc(0)) => {
      if (!settled) void this.#send(c, conv, kind, body).catch(() => undefined);
    };
    this.#send(c, conv, 'open', jsonBody({ runnerId, args: encodeBytes(args) })).catch((e: unknown) =>
      c.fail(this.#lost(runnerId, holder, `the relay could not be written: ${String(e)}`)),
    );
    return ready.then((p) => {
      pty = p;
      const stdin = new Writable({
        write: (chunk: Buffer, _enc, cb) => {
          if (settled) return cb(this.#lost(runnerId, holder, 'the stream ended'));
          window.sent += chunk.length;
          this.#send(c, conv, 'in', Buffer.from(chunk))
            .then(() => window.whenOpen())
            .then(
              () => cb(),
              (e: unknown) => cb(e instanceof Error ? e : new Error(String(e))),
            );
        },
        final: (cb) => {
          control('eof');
          cb();
        },
      });
      stdin.on('error', () => undefined);
      return {
        stdin,
        stdout,
        stderr,
        pty,
        resize: (size: TerminalSize) => {
          control('resize', jsonBody({ cols: size.cols, rows: size.rows }));
          return pty;
        },
        kill: () => control('kill'),
        exit,
      };
    });
  }

  // ——— holder side ———

  #serve(r: Row): void {
    const conv = r.conv;
    if (r.kind === 'call') {
      let call: z.infer<typeof CallFrame>;
      try {
        call = parseBody(CallFrame, r.body);
      } catch (e) {
        this.warn(e);
        return;
      }
      const c = this.#conversation(
        conv,
        r.from_replica,
        call.runnerId,
        {
          onFrame: () => undefined,
          fail: () => this.#convs.delete(conv),
        },
        r.seq + 1,
      );
      const answer = (
        v: { ok: true; value: unknown } | { ok: false; error: ReturnType<typeof problemOf> },
      ) => {
        void this.#send(c, conv, 'result', jsonBody(v))
          .catch(this.warn)
          .finally(() => this.#convs.delete(conv));
      };
      const ch = this.local.channel(call.runnerId);
      if (!ch?.isOpen) {
        answer({
          ok: false,
          error: problemOf(this.#lost(call.runnerId, this.replica, 'the session channel is not held here')),
        });
        return;
      }
      ch.call(call.op as SessionOp, decodeBytes(call.args), call.timeoutMs).then(
        (value) => answer({ ok: true, value: encodeBytes(value) }),
        (e: unknown) => answer({ ok: false, error: problemOf(e) }),
      );
      return;
    }
    let open: z.infer<typeof OpenFrame>;
    try {
      open = parseBody(OpenFrame, r.body);
    } catch (e) {
      this.warn(e);
      return;
    }
    this.#serveStream(conv, r.from_replica, open, r.seq + 1);
  }

  #serveStream(conv: string, peer: string, open: z.infer<typeof OpenFrame>, seqStart: number): void {
    const window = new Window(this.#window);
    const consumed = new Consumed(Math.max(1, Math.floor(this.#window / 4)));
    let stream: ExecStream | null = null;
    let ended = false;
    const held: [Kind, Buffer][] = [];
    const apply = (s: ExecStream, kind: Kind, body: Buffer) => {
      if (kind === 'in')
        s.stdin.write(body, () => {
          const ack = consumed.add(body.length);
          if (ack !== null && !ended)
            void this.#send(c, conv, 'ack', jsonBody({ bytes: ack })).catch(() => undefined);
        });
      else if (kind === 'eof') s.stdin.end();
      else if (kind === 'resize') {
        const size = parseBody(ResizeFrame, body);
        s.resize(size);
      } else if (kind === 'kill') s.kill();
      else if (kind === 'ack') window.ack(parseBody(AckFrame, body).bytes);
    };
    const finish = (x: { exitCode?: number | null; signal?: string | null; error?: unknown }) => {
      if (ended) return;
      ended = true;
      window.release();
      const body = x.error
        ? { error: problemOf(x.error) }
        : { exitCode: x.exitCode ?? null, signal: x.signal ?? null };
      void this.#send(c, conv, 'exit', jsonBody(body))
        .catch(this.warn)
        .finally(() => this.#convs.delete(conv));
    };
    const c = this.#conversation(
      conv,
      peer,
      open.runnerId,
      {
        onFrame: (kind, body) => {
          if (stream) apply(stream, kind, body);
          else held.push([kind, body]);
        },
        // The requester is gone: the shell it asked for is killed, not left running.
        fail: () => {
          stream?.kill();
          ended = true;
          window.release();
          this.#convs.delete(conv);
        },
      },
      seqStart,
    );
    const ch = this.local.channel(open.runnerId);
    if (!ch?.isOpen) {
      finish({ error: this.#lost(open.runnerId, this.replica, 'the session channel is not held here') });
      return;
    }
    const args = decodeBytes(open.args) as { handle: unknown; cmd: readonly string[]; options: unknown };
    ch.stream(args).then(
      (s) => {
        if (ended) {
          s.kill();
          return;
        }
        stream = s;
        void this.#send(c, conv, 'opened', jsonBody({ pty: s.pty })).catch(this.warn);
        for (const [kind, body] of held.splice(0)) apply(s, kind, body);
        // Output in order, windowed: the sources pause while WINDOW bytes are unacknowledged.
        const pump = (from: NodeJS.ReadableStream & { pause(): void; resume(): void }, kind: Kind) => {
          from.on('data', (chunk: Buffer) => {
            if (ended) return;
            window.sent += chunk.length;
            void this.#send(c, conv, kind, Buffer.from(chunk)).catch(this.warn);
            if (!window.open) {
              from.pause();
              void window.whenOpen().then(() => from.resume());
            }
          });
        };
        pump(s.stdout, 'out');
        pump(s.stderr, 'err');
        s.exit.then(
          (x) => finish({ exitCode: x.exitCode, signal: x.signal }),
          (e: unknown) => finish({ error: e }),
        );
      },
      (e: unknown) => finish({ error: e }),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    for (const c of [...this.#convs.values()])
      c.fail(this.#lost(c.runnerId, c.peer, 'this replica is stopping'));
    await this.#unlisten?.();
    await this.#draining;
    for (const q of this.#queues.values()) while (q.flushing) await new Promise((r) => setTimeout(r, 10));
  }
}
