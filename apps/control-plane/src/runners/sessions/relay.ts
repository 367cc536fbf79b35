// The session relay: a runner's session channel is one WebSocket held by ONE replica (session_channels.replica);
// any other replica sharing the database reaches that runner through the holder, over PostgreSQL. Each replica
// is both sides: the requester (relay-requester.ts) relays a driver call or a terminal stream to the holder,
// and the holder (relay-holder.ts) serves what other replicas relay to it on its local channel. Both speak
// conversations of `session_relay` rows + NOTIFY (relay-transport.ts), in the frames of relay-frames.ts:
//
//   requester → holder:  call {runnerId, op, args, timeoutMs} · open {runnerId, args} · in · eof · resize · kill
//   holder → requester:  result {ok, value | error} · opened {pty} · out · err · exit {exitCode, signal | error}
//   both ways:           ack {bytes}: data consumed (flow control, relay-window.ts) · alive: the peer is still there
//
// A peer silent for `deadMs` is gone: the call or stream fails with `spawn_failed`, reason `runner_unreachable`
// (503 sandbox_unavailable), and nothing was changed by this side.
//
// The relay's statements run on connections of its own (`connections`, default 2), never the shared pool:
// suspend and resume hold a transaction of that pool while their driver call is relayed, so relaying on it
// too would let enough concurrent ones take every connection and wait on each other (until the pool's
// connect timeout failed them all). No relay statement waits on anything while it holds a connection.
import type { ExecStream, SessionOp } from '@everdict/placement';
import type { Db } from '../../db/tx.js';
import type { Deps } from '../../services/context.js';
import { type LocalChannels, RelayHolder } from './relay-holder.js';
import { RelayRequester } from './relay-requester.js';
import { type RelayOptions, RelayTransport } from './relay-transport.js';

export type { LocalChannels } from './relay-holder.js';
export { RELAY_CHANNEL, type RelayOptions } from './relay-transport.js';

export class SessionRelay {
  readonly #transport: RelayTransport;
  readonly #requester: RelayRequester;
  readonly #holder: RelayHolder;
  /** The relay's own pool (null: it shares the database's, when the database offers none apart). */
  readonly #own: Db | null;

  constructor(
    deps: Deps,
    readonly replica: string,
    local: LocalChannels,
    opts: RelayOptions = {},
    warn: (e: unknown) => void = () => undefined,
  ) {
    this.#own = deps.ldb.separatePool?.(opts.connections ?? 2) ?? null;
    const db = this.#own ?? deps.db;
    this.#transport = new RelayTransport(deps.ldb, db, replica, opts, warn, (r) => this.#holder.serve(r));
    this.#requester = new RelayRequester(this.#transport, db);
    this.#holder = new RelayHolder(this.#transport, local);
  }

  start(): Promise<void> {
    return this.#transport.start();
  }

  /** Conversations open on this replica (for tests and metrics). */
  get open(): number {
    return this.#transport.open;
  }

  /** Reads and dispatches every frame addressed to this replica (coalesced: one drain at a time). */
  drain(): void {
    this.#transport.drain();
  }

  /** Deletes frames older than `staleMs` (addressed to a replica that died mid-relay). */
  sweep(staleMs?: number): Promise<number> {
    return this.#transport.sweep(staleMs);
  }

  /** Which replica holds `runnerId`'s channel, and when it last said so. */
  holderOf(runnerId: string): Promise<{ replica: string; seenAt: Date } | undefined> {
    return this.#requester.holderOf(runnerId);
  }

  /** One driver operation on `runnerId`, whose channel `holder` holds. */
  call(holder: string, runnerId: string, op: SessionOp, args: unknown, timeoutMs: number): Promise<unknown> {
    return this.#requester.call(holder, runnerId, op, args, timeoutMs);
  }

  /** A terminal stream on `runnerId`'s sandbox through `holder`: the ExecStream contract, windowed. */
  stream(
    holder: string,
    runnerId: string,
    args: { handle: unknown; cmd: readonly string[]; options: unknown },
  ): Promise<ExecStream> {
    return this.#requester.stream(holder, runnerId, args);
  }

  async close(): Promise<void> {
    await this.#transport.close();
    await this.#own?.destroy();
  }
}
