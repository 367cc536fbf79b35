// The session relay's edges on two real cores sharing one live PostgreSQL (runners/sessions/relay.ts): a
// holder that does not hold the runner's channel refuses at once; a stale channel row is refused before any
// frame is written; a holder replica that is gone fails the call with runner_unreachable after `deadMs`, and
// the frames addressed to it are swept once stale. A PGlite core has no relay (one process holds every
// channel). A terminal stream through the relay, with a runner's side spoken over a real WebSocket to A by the
// test: B's unread output stays within the window (the holder waits for acks), then every byte arrives in
// order, stdin too, and the exit. The whole path with a real runner: apps/runner/test/sessions-replicas.pg.test.ts.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PassThrough } from 'node:stream';
import {
  isPlacementError,
  type PlacementError,
  parseStreamFrame,
  STDIN,
  STDOUT,
  streamFrame,
} from '@everdict/placement';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type Core, startCore } from '../src/core.js';
import { openDatabase } from '../src/db/database.js';
import { withTx } from '../src/db/tx.js';
import { until } from '../src/http/testing/harness.js';
import { pairingProof } from '../src/http/testing/runners.js';
import { announceSkippedLiveSuite, createLiveDatabase, LIVE_PG } from './db.js';
import { migratedPglite } from './pglite-template.js';

announceSkippedLiveSuite('test/session-relay.pg.test.ts');

const WINDOW = 64 * 1024;
// deadMs: one process runs both replicas and the runner's side; under load (≈ 20 on 2 cores) the terminal's
// 4 MiB burst stalled its event loop past 1.5 s, and each replica judged the other gone.
const RELAY = { pollMs: 200, aliveMs: 100, deadMs: 5_000, windowBytes: WINDOW };
/** Each replica's shared pool. */
const POOL = 4;

/** `n` bytes numbered from `from` (each byte its index mod 251): any reordering or loss shows. */
const numbered = (from: number, n: number) =>
  Buffer.from(Array.from({ length: n }, (_, i) => (from + i) % 251));

async function refusal(p: Promise<unknown>): Promise<PlacementError> {
  const e = await p.then(
    () => {
      throw new Error('expected a refusal');
    },
    (x: unknown) => x,
  );
  if (!isPlacementError(e)) throw e;
  return e;
}

describe('the session relay is a PostgreSQL part', () => {
  it('a PGlite core has none: every channel is local', async () => {
    const core = await startCore({
      database: await openDatabase({ pglite: await migratedPglite(), migrate: false }),
      sessions: { sweep: false },
      scheduler: { enabled: false },
    });
    try {
      expect(core.sessionHub?.relay).toBeNull();
    } finally {
      await core.close();
    }
  });
});

describe.runIf(LIVE_PG)('the session relay between two replicas of one PostgreSQL', () => {
  let live: Awaited<ReturnType<typeof createLiveDatabase>>;
  let a: Core;
  let b: Core;
  const start = async (replicaId: string) =>
    startCore({
      database: await openDatabase({ databaseUrl: live.url, poolSize: POOL }),
      sessions: { sweep: false },
      scheduler: { enabled: false, replicaId },
      sessionRelay: RELAY,
    });

  beforeAll(async () => {
    live = await createLiveDatabase();
    a = await start('relay-a');
    b = await start('relay-b');
  }, 120_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await live?.drop();
  });

  const db = () => b.internals.deps.db;
  const hubB = () => {
    const h = b.sessionHub;
    if (!h) throw new Error('no hub');
    return h;
  };
  const channelRow = async (runnerId: string, replica: string, seenAt: Date) => {
    await sql`INSERT INTO session_channels (runner_id, replica, driver, images, slots, connected_at, seen_at)
      VALUES (${runnerId}, ${replica}, 'process', '["*"]'::jsonb, 1, ${seenAt}, ${seenAt})
      ON CONFLICT (runner_id) DO UPDATE SET replica = EXCLUDED.replica, seen_at = EXCLUDED.seen_at`.execute(
      db(),
    );
  };
  const framesTo = async (replica: string) =>
    Number(
      (
        await sql<{
          n: string;
        }>`SELECT count(*)::text AS n FROM session_relay WHERE to_replica = ${replica}`.execute(db())
      ).rows[0]?.n,
    );

  it('both replicas relay on PostgreSQL', () => {
    expect(a.sessionHub?.relay?.replica).toBe('relay-a');
    expect(b.sessionHub?.relay?.replica).toBe('relay-b');
  });

  it('a holder that does not hold the channel refuses at once (a call and a stream); no frame is left', async () => {
    await channelRow('rnr_elsewhere', 'relay-a', new Date());
    const link = await hubB().link('rnr_elsewhere');
    const e = await refusal(link.call('held', {}, 60_000));
    expect(e.code).toBe('spawn_failed');
    expect(e.detail).toMatchObject({ reason: 'runner_unreachable', replica: 'relay-a' });
    expect(e.message).toContain('not held here');
    const s = await refusal(link.stream({ handle: {}, cmd: ['sh'], options: {} }));
    expect(s.detail).toMatchObject({ reason: 'runner_unreachable' });
    expect(s.message).toContain('not held here');
    await until('both replicas drained their frames', async () =>
      (await framesTo('relay-a')) + (await framesTo('relay-b')) === 0 ? true : undefined,
    );
    expect(a.sessionHub?.relay?.open).toBe(0);
    expect(b.sessionHub?.relay?.open).toBe(0);
  });

  it('relayed calls inside transactions holding every shared connection complete (suspend and resume)', async () => {
    // Suspend and resume relay their driver call while their transaction holds a shared connection: as many
    // at once as the pool has connections would leave the relay none (the link's lookup, the frames, the
    // drain) — each would fail on the pool's connect timeout. The relay's own connections keep them going.
    await channelRow('rnr_elsewhere', 'relay-a', new Date());
    let holding = 0;
    const answers = await Promise.all(
      Array.from({ length: POOL }, () =>
        withTx(
          db(),
          async (tx) => {
            await sql`SELECT 1`.execute(tx);
            holding += 1;
            await until('every shared connection held', async () => (holding === POOL ? true : undefined));
            const link = await hubB().link('rnr_elsewhere');
            return refusal(link.call('snapshot', { handle: {} }, 60_000));
          },
          1,
        ),
      ),
    );
    for (const e of answers) {
      expect(e.detail).toMatchObject({ reason: 'runner_unreachable', replica: 'relay-a' });
      expect(e.message).toContain('not held here');
    }
    expect(b.sessionHub?.relay?.open).toBe(0);
  });

  it('a channel row older than the lease is refused before anything is written', async () => {
    await channelRow('rnr_stale', 'relay-a', new Date(Date.now() - 3_600_000));
    const e = await refusal(hubB().link('rnr_stale'));
    expect(e.detail).toMatchObject({ reason: 'runner_unreachable' });
    expect(await framesTo('relay-a')).toBe(0);
  });

  it('a holder replica that is gone: runner_unreachable after deadMs; its frames swept once stale', async () => {
    await channelRow('rnr_orphaned', 'relay-dead', new Date());
    const link = await hubB().link('rnr_orphaned');
    const e = await refusal(link.call('exec', { cmd: ['true'] }, 60_000));
    expect(e.code).toBe('spawn_failed');
    expect(e.detail).toMatchObject({ reason: 'runner_unreachable', replica: 'relay-dead' });
    expect(e.message).toContain(`no frame from the relaying replica for ${RELAY.deadMs} ms`);
    expect(b.sessionHub?.relay?.open).toBe(0);
    // Nobody reads what was addressed to the dead replica: it stays until it is stale, then any sweep removes it.
    const left = await framesTo('relay-dead');
    expect(left).toBeGreaterThan(0);
    expect(await hubB().relay?.sweep(3_600_000)).toBe(0);
    expect(await framesTo('relay-dead')).toBe(left);
    expect(await hubB().relay?.sweep(0)).toBeGreaterThanOrEqual(left);
    expect(await framesTo('relay-dead')).toBe(0);
  });

  it('a terminal through the relay: unread output stays within the window; then every byte in order, stdin too', async () => {
    const hubA = a.sessionHub;
    if (!hubA) throw new Error('no hub');
    const server: Server = createServer();
    server.on('upgrade', (req, socket, head) => {
      if (!hubA.upgrade(req, socket, head)) socket.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    // Closed in `finally` too: an open upgraded socket would hold server.close() (and hide a failure's cause
    // behind the test's timeout).
    let runnerSide: WebSocket | undefined;
    try {
      const runners = a.services.runners;
      if (!runners) throw new Error('no runner service');
      const { token } = await runners.mintSharedPairingToken({});
      const { runnerId, credential } = await runners.pair({
        token,
        ...pairingProof(token),
        name: 'relay-test',
        capabilities: { drivers: ['process'], kinds: ['sandbox'], images: ['default'], slots: 1 },
      });
      // The runner's side: a stream answers {pty:false}, then 4 MiB of stdout in 16 KiB frames, then exit 0.
      const ws = await new Promise<WebSocket>((resolve, reject) => {
        const w = new WebSocket(
          `ws://127.0.0.1:${(server.address() as AddressInfo).port}/runner/v1/sessions`,
          {
            headers: { authorization: `Bearer ${credential}` },
          },
        );
        runnerSide = w;
        w.once('open', () => resolve(w));
        w.once('error', reject);
      });
      const CHUNK = 16 * 1024;
      const TOTAL = 256 * CHUNK;
      const stdin: Buffer[] = [];
      let release!: () => void;
      const released = new Promise<void>((r) => {
        release = r;
      });
      ws.on('message', (data, isBinary) => {
        const buf = data as Buffer;
        if (isBinary) {
          const f = parseStreamFrame(buf);
          if (f?.kind === STDIN) stdin.push(Buffer.from(f.bytes));
          return;
        }
        const f = JSON.parse(String(buf)) as { t: string; id: string; op: string; args: { sid: number } };
        void released.then(() => ws.send(JSON.stringify({ t: 'exit', sid: 1, exitCode: 0 })));
        if (f.t !== 'call') return;
        if (f.op !== 'stream') {
          ws.send(JSON.stringify({ t: 'result', id: f.id, ok: true, value: [] }));
          return;
        }
        const sid = f.args.sid;
        ws.send(JSON.stringify({ t: 'result', id: f.id, ok: true, value: { pty: false } }));
        for (let at = 0; at < TOTAL; at += CHUNK) ws.send(streamFrame(STDOUT, sid, numbered(at, CHUNK)));
        void released.then(() => ws.send(JSON.stringify({ t: 'exit', sid, exitCode: 0 })));
      });
      ws.send(
        JSON.stringify({
          t: 'hello',
          description: {
            driver: 'process',
            placement: { where: 'driver' },
            capabilities: {
              exec: true,
              stream: true,
              pty: false,
              logs: false,
              snapshot: false,
              restore: false,
              usage: false,
              reap: true,
              network: false,
              images: false,
            },
            mechanism: 'none',
          },
          images: ['default'],
          slots: 1,
        }),
      );
      await until('the channel registered on A', async () => (hubA.connected(runnerId) ? true : undefined));
      await until('its row', async () => {
        const row = await db()
          .selectFrom('session_channels')
          .select('replica')
          .where('runner_id', '=', runnerId)
          .executeTakeFirst();
        return row?.replica === 'relay-a' ? true : undefined;
      });

      const link = await hubB().link(runnerId);
      const stream = await link.stream({ handle: {}, cmd: ['cat'], options: {} });
      expect(stream.pty).toBe(false);
      stream.stderr.resume(); // (exit resolves once both output streams have been read to their end)
      // Nobody reads B's stdout: what B holds is bounded by the window, and nothing waits in the table.
      const heldOnB = () => stream.stdout.readableLength + (stream.stdout as PassThrough).writableLength;
      await until('B to hold most of a window', async () => (heldOnB() >= WINDOW / 2 ? true : undefined));
      await until('the frames to B drained', async () =>
        (await framesTo('relay-b')) === 0 ? true : undefined,
      );
      expect(heldOnB()).toBeLessThanOrEqual(WINDOW + CHUNK);
      expect(heldOnB()).toBeLessThan(TOTAL / 8);

      // stdin, in order, through the relay's own window.
      const sent: Buffer[] = [];
      for (let i = 0; i < 64; i++) {
        const b = numbered(i * 1000, 1000);
        sent.push(b);
        stream.stdin.write(b);
      }
      // Now read: all 4 MiB arrive, in order, then the exit.
      const got: Buffer[] = [];
      stream.stdout.on('data', (c: Buffer) => got.push(c));
      await until('all the output', async () =>
        got.reduce((n, c) => n + c.length, 0) >= TOTAL ? true : undefined,
      );
      expect(Buffer.concat(got).equals(numbered(0, TOTAL))).toBe(true);
      await until('all the input at the runner', async () =>
        stdin.reduce((n, c) => n + c.length, 0) >= 64_000 ? true : undefined,
      );
      expect(Buffer.concat(stdin).equals(Buffer.concat(sent))).toBe(true);
      release();
      expect(await stream.exit).toEqual({ exitCode: 0, signal: null });
      await until('the conversation closed on both', async () =>
        a.sessionHub?.relay?.open === 0 && b.sessionHub?.relay?.open === 0 ? true : undefined,
      );
      ws.close();
    } finally {
      runnerSide?.terminate();
      await new Promise<void>((r) => server.close(() => r()));
    }
  }, 120_000);
});
