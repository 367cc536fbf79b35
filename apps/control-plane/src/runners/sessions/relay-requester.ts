// The requester side of the session relay (relay.ts): a replica that does not hold a runner's session
// channel relays each driver operation to the replica that does, as a conversation of `session_relay` rows
// (relay-transport.ts).
//
//   requester → holder:  call {runnerId, op, args, timeoutMs} · open {runnerId, args} · in · eof · resize · kill
//   holder → requester:  result {ok, value | error} · opened {pty} · out · err · exit {exitCode, signal | error}
//
// A terminal's stdin is windowed (the write is held once WINDOW bytes are unacknowledged) and its output is
// acknowledged each quarter window as it is consumed. A call with no answer within its timeout plus `deadMs`,
// or a holder gone silent, fails with `spawn_failed`, reason `runner_unreachable` (503 sandbox_unavailable).
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
import type { Db } from '../../db/tx.js';
import { problemError } from './channel.js';
import { AckFrame, ExitFrame, jsonBody, type Kind, parseBody, ResultFrame } from './relay-frames.js';
import type { RelayTransport } from './relay-transport.js';
import { Consumed, Window } from './relay-window.js';
import { endStreams } from './stream-exit.js';

export class RelayRequester {
  /** `db`: the relay's own connections (relay.ts), never the shared pool a caller's transaction may hold. */
  constructor(
    private readonly transport: RelayTransport,
    private readonly db: Db,
  ) {}

  /** Which replica holds `runnerId`'s channel, and when it last said so (its `session_channels` row). */
  async holderOf(runnerId: string): Promise<{ replica: string; seenAt: Date } | undefined> {
    const row = await this.db
      .selectFrom('session_channels')
      .select(['replica', 'seen_at'])
      .where('runner_id', '=', runnerId)
      .executeTakeFirst();
    return row && { replica: row.replica, seenAt: row.seen_at };
  }

  /** One driver operation on `runnerId`, whose channel `holder` holds. */
  call(holder: string, runnerId: string, op: SessionOp, args: unknown, timeoutMs: number): Promise<unknown> {
    const t = this.transport;
    const conv = t.newId();
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        t.end(conv);
      };
      const timer = setTimeout(() => {
        done();
        reject(t.lost(runnerId, holder, `${op} got no answer within ${timeoutMs} ms`));
      }, timeoutMs + t.deadMs);
      const c = t.converse(conv, holder, runnerId, {
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
      t.send(c, 'call', jsonBody({ runnerId, op, args: encodeBytes(args), timeoutMs })).catch(
        (e: unknown) => {
          done();
          reject(t.lost(runnerId, holder, `the relay could not be written: ${String(e)}`));
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
    const t = this.transport;
    const conv = t.newId();
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const window = new Window(t.window);
    const consumed = new Consumed(Math.max(1, Math.floor(t.window / 4)));
    let pty = false;
    let settled = false;
    let settleExit!: (x: StreamExit | PlacementError) => void;
    const exit = new Promise<StreamExit>((resolve, reject) => {
      settleExit = (x) => {
        if (settled) return;
        settled = true;
        t.end(conv);
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
        if (ack !== null && !settled) void t.send(c, 'ack', jsonBody({ bytes: ack })).catch(() => undefined);
      });
    };
    const c = t.converse(conv, holder, runnerId, {
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
            refused(result instanceof PlacementError ? result : t.lost(runnerId, holder, 'no stream'));
          settleExit(result);
        }
      },
      fail: (e) => {
        if (!isOpen) refused(e);
        settleExit(e);
      },
    });
    const control = (kind: Kind, body: Buffer = Buffer.alloc(0)) => {
      if (!settled) void t.send(c, kind, body).catch(() => undefined);
    };
    t.send(c, 'open', jsonBody({ runnerId, args: encodeBytes(args) })).catch((e: unknown) =>
      c.fail(t.lost(runnerId, holder, `the relay could not be written: ${String(e)}`)),
    );
    return ready.then((p) => {
      pty = p;
      const stdin = new Writable({
        write: (chunk: Buffer, _enc, cb) => {
          if (settled) return cb(t.lost(runnerId, holder, 'the stream ended'));
          window.sent += chunk.length;
          t.send(c, 'in', Buffer.from(chunk))
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
}
