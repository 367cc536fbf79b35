// The session channels of the runners connected to this replica. A runner opens `GET /runner/v1/sessions`
// (WebSocket upgrade on the node server, `Authorization: Bearer <runner credential>`) — outbound from its
// side, so it needs no inbound port — and says hello (its driver's description, images, slots). While the
// channel is open this replica advances the runner's `session_channels.seen_at`; placement reads that table.
// On every connect the hub's listeners run (the sessions module reaps the runner's orphans by label), and
// every `reconcileMs` it disposes what the runner holds that no open session row names (compute settled by
// another replica, or provisioned for an open that never committed).
// Every other replica sharing the database reaches the runner through this one: the relay (relay.ts) forwards
// each driver call and terminal stream over PostgreSQL to the replica `session_channels.replica` names.
// A revoked runner's channel is closed: at once on the revoking replica (`revoked`, from the runner service),
// at the revoke's NOTIFY on the others (RUNNERS_CHANNEL), and at the latest at the next touch (which re-reads the
// runners' state, and never advances a revoked runner's `seen_at`) — then the sweep settles its sessions lost.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { DriverDescription, MAX_FRAME_BYTES, PlacementError, RunnerFrame } from '@everdict/placement';
import { sql } from 'kysely';
import { type WebSocket, WebSocketServer } from 'ws';
import { RUNNERS_CHANNEL } from '../../auth/runner-credentials.js';
import { json } from '../../db/numeric.js';
import type { Executor } from '../../db/tx.js';
import { refuseUpgradeFor } from '../../http/upgrade-refusal.js';
import type { Deps } from '../../services/context.js';
import { authenticateRunner, credentialHash } from '../registry.js';
import { RunnerChannel, type RunnerHello } from './channel.js';
import { type RelayOptions, SessionRelay } from './relay.js';
import { type ChannelLookup, RemoteDriver, type SessionLink } from './remote-driver.js';

export const SESSION_CHANNEL_PATH = '/runner/v1/sessions';
/** A session row's holder for a runner. */
export const runnerHolder = (runnerId: string): string => `runner:${runnerId}`;
export const runnerOfHolder = (holder: string): string | null =>
  holder.startsWith('runner:') ? holder.slice('runner:'.length) : null;

export interface SessionHubOptions {
  /** This replica's name in `session_channels.replica` (default: random). */
  readonly replica?: string;
  /** A runner not seen for this long is gone (the lease rule's number). */
  readonly leaseMs: number;
  /** How often `seen_at` is advanced (default leaseMs / 3). */
  readonly touchMs?: number;
  /** How often held compute is reconciled against the rows (default 5 s; 0 = never). */
  readonly reconcileMs?: number;
  /** A held sandbox younger than this is never disposed by reconciliation (an open in flight; default 120 s). */
  readonly reconcileGraceMs?: number;
  /**
   * The cross-replica relay (relay.ts): on PostgreSQL by default; `false` = off (a runner whose channel another
   * replica holds is then unreachable from here). PGlite is one process: every channel is local, no relay.
   */
  readonly relay?: RelayOptions | false;
}

type Listener = (runnerId: string) => Promise<unknown>;

/** Each core's hub (keyed by its `deps`): the runner service closes a revoked runner's channel through it. */
const hubs = new WeakMap<object, RunnerSessionHub>();

/** The session hub of the replica whose `deps` these are (none: the core runs no sessions). */
export const replicaSessionHub = (deps: object): RunnerSessionHub | undefined => hubs.get(deps);

export class RunnerSessionHub implements ChannelLookup {
  readonly replica: string;
  readonly #channels = new Map<string, RunnerChannel>();
  /** The credential hash each channel's runner authenticated with (RUNNERS_CHANNEL names runners by it). */
  readonly #credentials = new Map<string, string>();
  readonly #wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES });
  readonly #listeners: Listener[] = [];
  readonly #relay: SessionRelay | null;
  #touch: ReturnType<typeof setInterval> | null = null;
  #reconcile: ReturnType<typeof setInterval> | null = null;
  #unlisten: (() => Promise<void>) | null = null;

  constructor(
    private readonly deps: Deps,
    readonly opts: SessionHubOptions,
  ) {
    this.replica = opts.replica ?? `replica-${randomBytes(6).toString('hex')}`;
    this.#relay =
      opts.relay !== false && deps.ldb.dialect === 'postgres'
        ? new SessionRelay(deps, this.replica, this, opts.relay ?? {}, (e) => this.#warn(e))
        : null;
    hubs.set(deps, this);
  }

  /** The relay to other replicas' runners (null on PGlite or when turned off). */
  get relay(): SessionRelay | null {
    return this.#relay;
  }

  #warn = (e: unknown) => this.deps.log('warn', 'runner session channel', { error: String(e) });

  async start(): Promise<void> {
    await this.#relay?.start();
    // A revoke (or drain) on any replica: a channel of that runner here is closed if it was revoked.
    this.#unlisten = await this.deps.ldb.listen(RUNNERS_CHANNEL, (hash) => {
      const ids = [...this.#credentials].filter(([, h]) => h === hash).map(([id]) => id);
      if (ids.length > 0) void this.#closeRevoked(ids).catch(this.#warn);
    });
    const touchMs = this.opts.touchMs ?? Math.max(50, Math.floor(this.opts.leaseMs / 3));
    this.#touch = setInterval(() => void this.#touchAll().catch(this.#warn), touchMs);
    this.#touch.unref?.();
    const every = this.opts.reconcileMs ?? 5_000;
    if (every > 0) {
      this.#reconcile = setInterval(() => void this.reconcile().catch(this.#warn), every);
      this.#reconcile.unref?.();
    }
  }

  /** Called with a runner's id each time its channel (re)connects, after the hello. */
  onConnect(listener: Listener): void {
    this.#listeners.push(listener);
  }

  channel(runnerId: string): RunnerChannel | undefined {
    return this.#channels.get(runnerId);
  }

  connected(runnerId: string): boolean {
    return this.#channels.get(runnerId)?.isOpen === true;
  }

  /**
   * The way to a runner's driver: this replica's open channel; else, through the relay, the replica that
   * holds it (its `session_channels` row seen within the lease). Refused `spawn_failed` (reason
   * `runner_unreachable`, 503 sandbox_unavailable) when neither — before anything is sent.
   */
  async link(runnerId: string): Promise<SessionLink> {
    const ch = this.#channels.get(runnerId);
    if (ch?.isOpen) return ch;
    const relay = this.#relay;
    if (relay) {
      // On the relay's own connections: a caller may hold a transaction of the shared pool (relay.ts).
      const row = await relay.holderOf(runnerId);
      const since = this.deps.clock().getTime() - this.opts.leaseMs;
      if (row && row.replica !== this.replica && row.seenAt.getTime() > since) {
        const holder = row.replica;
        return {
          call: (op, args, timeoutMs) => relay.call(holder, runnerId, op, args, timeoutMs),
          stream: (args) => relay.stream(holder, runnerId, args),
        };
      }
    }
    throw new PlacementError(
      'spawn_failed',
      `runner ${runnerId} has no live session channel on any replica`,
      { runnerId, reason: 'runner_unreachable' },
    );
  }

  driver(runnerId: string): RemoteDriver {
    return new RemoteDriver(this, runnerId);
  }

  /** The node server's upgrade listener; false (socket untouched) for any other path. */
  upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const url = new URL(req.url ?? '/', 'http://runner');
    if (url.pathname !== SESSION_CHANNEL_PATH) return false;
    const auth = req.headers.authorization ?? '';
    const credential = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    authenticateRunner(this.deps.db, credential).then(
      (runner) => {
        this.#wss.handleUpgrade(req, socket, head, (ws) =>
          this.#accept(runner.id, credentialHash(credential), ws),
        );
      },
      (e: unknown) => refuseUpgradeFor(socket, e, (defect) => this.#warn(defect)),
    );
    return true;
  };

  #accept(runnerId: string, hash: string, ws: WebSocket): void {
    const timer = setTimeout(() => ws.close(1008, 'no hello'), 10_000);
    ws.once('message', (data, isBinary) => {
      clearTimeout(timer);
      let hello: RunnerHello;
      try {
        if (isBinary) throw new Error('the first frame is the hello');
        const f = RunnerFrame.parse(JSON.parse(String(data)));
        if (f.t !== 'hello') throw new Error('the first frame is the hello');
        hello = { description: DriverDescription.parse(f.description), images: f.images, slots: f.slots };
      } catch (e) {
        ws.close(1008, String(e).slice(0, 100));
        return;
      }
      const channel = new RunnerChannel(runnerId, hello, ws, this.#warn);
      this.#channels.get(runnerId)?.close(1000, 'replaced by a newer channel');
      this.#channels.set(runnerId, channel);
      this.#credentials.set(runnerId, hash);
      void channel.closed.then(() => {
        if (this.#channels.get(runnerId) !== channel) return;
        this.#channels.delete(runnerId);
        this.#credentials.delete(runnerId);
      });
      // Registered, then the runner's state read again: a revoke that committed after the upgrade's
      // authentication (its row delete before this insert) closes the channel here and now.
      void this.#register(runnerId, hello)
        .then(() => this.#closeRevoked([runnerId]))
        .then((active) =>
          active.length > 0 ? Promise.all(this.#listeners.map((l) => l(runnerId))) : undefined,
        )
        .catch(this.#warn);
    });
  }

  async #register(runnerId: string, hello: RunnerHello): Promise<void> {
    const now = this.deps.clock();
    const row = {
      runner_id: runnerId,
      replica: this.replica,
      driver: hello.description.driver,
      images: json([...hello.images]),
      slots: hello.slots,
      connected_at: now,
      seen_at: now,
    };
    await this.deps.db
      .insertInto('session_channels')
      .values(row)
      .onConflict((oc) =>
        oc.column('runner_id').doUpdateSet({
          replica: row.replica,
          driver: row.driver,
          images: row.images,
          slots: row.slots,
          connected_at: now,
          seen_at: now,
        }),
      )
      .execute();
  }

  /**
   * The runner was revoked: its channel here is closed (every call and stream on it refused at once, its
   * sessions no longer `connected`) and this replica's row of it removed, so that the sweep settles the
   * sessions it held open lost.
   */
  async revoked(runnerId: string): Promise<void> {
    this.#channels.get(runnerId)?.close(1008, 'runner revoked');
    await this.deps.db
      .deleteFrom('session_channels')
      .where('runner_id', '=', runnerId)
      .where('replica', '=', this.replica)
      .execute();
  }

  /** Closes the channels of those of `runnerIds` that are revoked; answers the others. */
  async #closeRevoked(runnerIds: readonly string[]): Promise<string[]> {
    const rows = await this.deps.db
      .selectFrom('runners')
      .select('id')
      .where('id', 'in', runnerIds)
      .where('state', '=', 'revoked')
      .execute();
    const revoked = new Set(rows.map((r) => r.id));
    for (const id of revoked) await this.revoked(id);
    return runnerIds.filter((id) => !revoked.has(id));
  }

  async #touchAll(): Promise<void> {
    const open = [...this.#channels.values()].filter((c) => c.isOpen).map((c) => c.runnerId);
    if (open.length === 0) return;
    // A revoked runner is never seen again (its revoke's NOTIFY may not have reached this replica).
    const live = await this.#closeRevoked(open);
    if (live.length === 0) return;
    await this.deps.db
      .updateTable('session_channels')
      .set({ seen_at: this.deps.clock() })
      .where('runner_id', 'in', live)
      .where('replica', '=', this.replica)
      .execute();
  }

  /** Disposes what each connected runner holds that no open session row of it names (past the grace). */
  async reconcile(graceMs = this.opts.reconcileGraceMs ?? 120_000): Promise<number> {
    const grace = graceMs;
    let disposed = 0;
    for (const ch of [...this.#channels.values()]) {
      if (!ch.isOpen) continue;
      const driver = this.driver(ch.runnerId);
      const held = await driver.held();
      const stale = held.filter((h) => h.ageMs >= grace);
      if (stale.length === 0) continue;
      const rows = await this.deps.db
        .selectFrom('sessions')
        .select(['run_id', 'handle'])
        .where('holder', '=', runnerHolder(ch.runnerId))
        .where('state', '=', 'open')
        .where(
          'run_id',
          'in',
          stale.map((h) => h.handle.labels.runId),
        )
        .execute();
      const named = new Set(rows.map((r) => (r.handle as { id?: string } | null)?.id));
      for (const h of stale) {
        if (named.has(h.handle.id)) continue;
        await driver.dispose(h.handle).catch(this.#warn);
        disposed += 1;
      }
    }
    return disposed;
  }

  /**
   * A runner for a new session's compute: active, of the tenant (or shared), seen within the lease, offering
   * `driver` and `image` — the one holding the fewest open sessions, this replica's channels first. Null
   * when none. The image is one its hello announces AND one it registered for the kind `sandbox` when it
   * paired (`runner_images`, the image or `*`): a channel cannot widen what the runner was paired for, and a
   * runner paired for command/eval runs only holds no sessions. `ex`: the caller's
   * transaction, when it has one (PGlite is one connection).
   */
  async place(
    tenant: string,
    driver: string,
    image: string,
    target?: string,
    ex: Executor = this.deps.db,
  ): Promise<string | null> {
    const since = new Date(this.deps.clock().getTime() - this.opts.leaseMs);
    const { rows } = await sql<{ runner_id: string; replica: string }>`
      SELECT c.runner_id, c.replica FROM session_channels c JOIN runners r ON r.id = c.runner_id
      WHERE r.state = 'active' AND (r.tenant_id = ${tenant} OR r.tenant_id IS NULL)
        AND c.driver = ${driver} AND c.seen_at > ${since}
        AND (c.images @> jsonb_build_array(${image}::text) OR c.images @> '["*"]'::jsonb)
        AND EXISTS (SELECT 1 FROM runner_images i
          WHERE i.runner_id = c.runner_id AND i.kind = 'sandbox' AND i.image IN (${image}, '*'))
        ${target ? sql`AND c.runner_id = ${target}` : sql``}
      ORDER BY (c.replica = ${this.replica}) DESC,
        (SELECT count(*) FROM sessions s WHERE s.holder = 'runner:' || c.runner_id AND s.state = 'open'),
        c.runner_id
      LIMIT 50`.execute(ex);
    // A channel of this replica that closed since (seen_at not yet stale) is not a candidate: this replica saw it close.
    const pick = rows.find((r) => r.replica !== this.replica || this.connected(r.runner_id));
    return pick?.runner_id ?? null;
  }

  async close(): Promise<void> {
    await this.#unlisten?.();
    if (this.#touch) clearInterval(this.#touch);
    if (this.#reconcile) clearInterval(this.#reconcile);
    for (const c of this.#channels.values()) c.close(1001, 'control plane stopping');
    await this.#relay?.close();
    await new Promise<void>((r) => this.#wss.close(() => r()));
  }
}
