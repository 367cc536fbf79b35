// The session relay's transport (relay.ts): conversations carried as rows of `session_relay` (migration 0020)
// addressed to a replica, each INSERT with a NOTIFY on RELAY_CHANNEL whose payload names the addressee
// (delivered at commit); the addressee deletes its rows in id order and dispatches them by conversation (a
// correlation id). A poll covers a lost LISTEN connection. Both sides use it: the requester (relay-requester.ts)
// opens conversations; a frame of a conversation this replica does not know is a holder's (relay-holder.ts).
//
// Every conversation's frames travel one serial queue per addressee (a batch per INSERT), so they arrive in
// the order sent; a per-conversation sequence number restores that order should a drain see them otherwise.
// A peer silent for `deadMs` (no frame, not even `alive`) is gone: its conversation fails with `spawn_failed`,
// reason `runner_unreachable`. Rows addressed to a replica that died are deleted by any replica's sweep once
// older than `staleMs`.
import { randomBytes } from 'node:crypto';
import { PlacementError } from '@everdict/placement';
import { sql } from 'kysely';
import type { LedgerDatabase } from '../../db/database.js';
import { fallbackPoll } from '../../db/fallback-poll.js';
import type { Db } from '../../db/tx.js';
import type { Kind } from './relay-frames.js';

export const RELAY_CHANNEL = 'everdict_session_relay';

export interface RelayOptions {
  /** How often a drain runs without a NOTIFY (default 1000 ms). */
  readonly pollMs?: number;
  /** …while this process is alone on its database (db/fallback-poll.ts; default 5 × pollMs). */
  readonly alonePollMs?: number;
  /** An idle conversation sends `alive` this often (default 1000 ms). */
  readonly aliveMs?: number;
  /** A peer silent this long is gone (default 10 s). */
  readonly deadMs?: number;
  /** Rows older than this are addressed to a dead replica: swept (default 60 s). */
  readonly staleMs?: number;
  /** Unacknowledged terminal bytes a sender may have in flight, per direction (default 1 MiB). */
  readonly windowBytes?: number;
  /** The relay's own database connections, apart from the shared pool (default 2). */
  readonly connections?: number;
}

/** A frame as read from `session_relay`. */
export interface RelayRow {
  from_replica: string;
  conv: string;
  seq: number;
  kind: string;
  body: Buffer;
}

/** What a side does with its conversation's frames, and when the peer is lost. */
export interface ConversationHandlers {
  onFrame(kind: Kind, body: Buffer): void;
  fail(e: PlacementError): void;
}

/** One relayed operation (a call or a terminal stream) between this replica and `peer`. */
export interface Conversation extends ConversationHandlers {
  readonly id: string;
  readonly peer: string;
  readonly runnerId: string;
  lastHeard: number;
  lastSent: number;
  nextIn: number;
  readonly early: Map<number, RelayRow>;
  nextOut: number;
}

interface Outgoing {
  conv: string;
  seq: number;
  kind: Kind;
  body: Buffer;
  resolve(): void;
  reject(e: unknown): void;
}

interface Queue {
  frames: Outgoing[];
  flushing: boolean;
}

export class RelayTransport {
  readonly #convs = new Map<string, Conversation>();
  readonly #queues = new Map<string, Queue>();
  #seq = 0;
  #draining: Promise<void> | null = null;
  /** When the last drain began (performance.now()). */
  #drainedAt = Number.NEGATIVE_INFINITY;
  #again = false;
  #timers: ReturnType<typeof setInterval>[] = [];
  #unlisten: (() => Promise<void>) | null = null;
  #closed = false;
  readonly #aliveMs: number;
  readonly #deadMs: number;
  /** Unacknowledged terminal bytes a sender may have in flight. */
  readonly window: number;

  /** `serve`: a frame opening a conversation this replica does not know (a holder being asked). */
  constructor(
    private readonly ldb: Pick<LedgerDatabase, 'listen' | 'dialect' | 'alone'>,
    private readonly db: Db,
    readonly replica: string,
    private readonly opts: RelayOptions,
    readonly warn: (e: unknown) => void,
    private readonly serve: (r: RelayRow) => void,
  ) {
    this.#aliveMs = opts.aliveMs ?? 1000;
    this.#deadMs = opts.deadMs ?? 10_000;
    this.window = opts.windowBytes ?? 1024 * 1024;
  }

  /** A requester's wait beyond an operation's own timeout before the holder counts as gone. */
  get deadMs(): number {
    return this.#deadMs;
  }

  async start(): Promise<void> {
    try {
      this.#unlisten = await this.ldb.listen(RELAY_CHANNEL, (to) => {
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
    // Alone on the database, no other replica can address a row to this one: the poll's looks are spaced out.
    const fallback = fallbackPoll(this.ldb, this.opts.pollMs ?? 1000, this.opts.alonePollMs);
    every(fallback.pollMs, () => {
      if (fallback.due(this.#drainedAt)) this.drain();
    });
    every(this.#aliveMs, () => this.#heartbeat());
    const staleMs = this.opts.staleMs ?? 60_000;
    every(Math.max(1000, Math.floor(staleMs / 2)), () => void this.sweep(staleMs).catch(this.warn));
    this.drain();
  }

  /** Conversations open on this replica. */
  get open(): number {
    return this.#convs.size;
  }

  /** The refusal of a conversation whose peer (or runner) cannot be reached: nothing changed on this side. */
  lost(runnerId: string, peer: string, what: string): PlacementError {
    return new PlacementError('spawn_failed', `runner ${runnerId} via replica ${peer}: ${what}`, {
      runnerId,
      replica: peer,
      reason: 'runner_unreachable',
    });
  }

  /** A new conversation id (a requester's). */
  newId(): string {
    return `${this.replica}:${++this.#seq}:${randomBytes(4).toString('hex')}`;
  }

  /** Registers a conversation; `seqStart`: the next frame expected from the peer. */
  converse(
    id: string,
    peer: string,
    runnerId: string,
    handlers: ConversationHandlers,
    seqStart = 0,
  ): Conversation {
    const now = Date.now();
    const c: Conversation = {
      id,
      peer,
      runnerId,
      lastHeard: now,
      lastSent: now,
      nextIn: seqStart,
      early: new Map(),
      nextOut: 0,
      ...handlers,
    };
    this.#convs.set(id, c);
    return c;
  }

  /** Forgets a conversation: its later frames are dropped. */
  end(id: string): void {
    this.#convs.delete(id);
  }

  /** Sends one frame of `c` to its peer; resolves once its row is committed. */
  send(c: Conversation, kind: Kind, body: Buffer): Promise<void> {
    c.lastSent = Date.now();
    const seq = c.nextOut++;
    return new Promise((resolve, reject) => {
      let q = this.#queues.get(c.peer);
      if (!q) {
        q = { frames: [], flushing: false };
        this.#queues.set(c.peer, q);
      }
      q.frames.push({ conv: c.id, seq, kind, body, resolve, reject });
      if (!q.flushing) void this.#flush(c.peer, q);
    });
  }

  async #flush(to: string, q: Queue): Promise<void> {
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
            SELECT pg_notify(${RELAY_CHANNEL}, ${to}) FROM (SELECT 1 FROM ins LIMIT 1) x`.execute(this.db);
          for (const f of batch) f.resolve();
        } catch (e) {
          // A frame that could not be written breaks its conversation's order: the conversation fails whole.
          for (const f of batch) {
            f.reject(e);
            const c = this.#convs.get(f.conv);
            c?.fail(this.lost(c.runnerId, c.peer, `the relay could not be written: ${String(e)}`));
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
    this.#drainedAt = performance.now();
    this.#draining = (async () => {
      do {
        this.#again = false;
        const { rows } = await sql<RelayRow>`WITH d AS (
            DELETE FROM session_relay WHERE to_replica = ${this.replica}
            RETURNING id, from_replica, conv, seq, kind, body)
          SELECT from_replica, conv, seq, kind, body FROM d ORDER BY id`.execute(this.db);
        for (const r of rows) this.#receive(r);
      } while (this.#again && !this.#closed);
    })()
      .catch(this.warn)
      .finally(() => {
        this.#draining = null;
      });
  }

  #receive(r: RelayRow): void {
    const c = this.#convs.get(r.conv);
    if (!c) {
      // A new conversation: this replica is the holder being asked.
      if (r.kind === 'call' || r.kind === 'open') this.serve(r);
      return;
    }
    c.lastHeard = Date.now();
    if (r.seq !== c.nextIn) {
      if (r.seq > c.nextIn) c.early.set(r.seq, r);
      return;
    }
    let next: RelayRow | undefined = r;
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
    for (const c of this.#convs.values()) {
      if (now - c.lastHeard > this.#deadMs) {
        c.fail(this.lost(c.runnerId, c.peer, `no frame from the relaying replica for ${this.#deadMs} ms`));
        continue;
      }
      if (now - c.lastSent >= this.#aliveMs)
        void this.send(c, 'alive', Buffer.alloc(0)).catch(() => undefined);
    }
  }

  /** Deletes frames older than `staleMs` (addressed to a replica that died mid-relay). */
  async sweep(staleMs = this.opts.staleMs ?? 60_000): Promise<number> {
    const { rows } = await sql<{ n: string }>`WITH d AS (
        DELETE FROM session_relay WHERE created_at < now() - make_interval(secs => ${staleMs / 1000}::float8)
        RETURNING 1) SELECT count(*)::text AS n FROM d`.execute(this.db);
    return Number(rows[0]?.n ?? 0);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    for (const c of [...this.#convs.values()])
      c.fail(this.lost(c.runnerId, c.peer, 'this replica is stopping'));
    await this.#unlisten?.();
    await this.#draining;
    for (const q of this.#queues.values()) while (q.flushing) await new Promise((r) => setTimeout(r, 10));
  }
}
