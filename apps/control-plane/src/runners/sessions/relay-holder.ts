// The holder side of the session relay (relay.ts): the replica holding a runner's session channel serves the
// conversations other replicas open on it (relay-transport.ts) — a `call` answered with one `result`, an
// `open` with `opened`, the output (`out`, `err`) and the `exit`. A runner whose channel is not held here is
// refused at once (`spawn_failed`, reason `runner_unreachable`). Output is windowed: the sources pause while
// WINDOW bytes are unacknowledged; stdin is acknowledged each quarter window as the runner takes it. A
// requester gone silent has its shell killed, not left running.
import { decodeBytes, type ExecStream, encodeBytes, type SessionOp } from '@everdict/placement';
import type { z } from 'zod';
import type { RunnerChannel } from './channel.js';
import {
  AckFrame,
  CallFrame,
  jsonBody,
  type Kind,
  OpenFrame,
  parseBody,
  problemOf,
  ResizeFrame,
} from './relay-frames.js';
import type { RelayRow, RelayTransport } from './relay-transport.js';
import { Consumed, Window } from './relay-window.js';

/** The transport a holder serves on: this replica's local channel for a runner, if it holds it. */
export interface LocalChannels {
  channel(runnerId: string): RunnerChannel | undefined;
}

export class RelayHolder {
  constructor(
    private readonly transport: RelayTransport,
    private readonly local: LocalChannels,
  ) {}

  /** The first frame of a conversation another replica opened: a `call` or an `open`. */
  serve(r: RelayRow): void {
    const t = this.transport;
    if (r.kind === 'call') {
      let call: z.infer<typeof CallFrame>;
      try {
        call = parseBody(CallFrame, r.body);
      } catch (e) {
        t.warn(e);
        return;
      }
      this.#serveCall(r.conv, r.from_replica, call, r.seq + 1);
      return;
    }
    let open: z.infer<typeof OpenFrame>;
    try {
      open = parseBody(OpenFrame, r.body);
    } catch (e) {
      t.warn(e);
      return;
    }
    this.#serveStream(r.conv, r.from_replica, open, r.seq + 1);
  }

  #serveCall(conv: string, peer: string, call: z.infer<typeof CallFrame>, seqStart: number): void {
    const t = this.transport;
    const c = t.converse(
      conv,
      peer,
      call.runnerId,
      {
        onFrame: () => undefined,
        fail: () => t.end(conv),
      },
      seqStart,
    );
    const answer = (v: { ok: true; value: unknown } | { ok: false; error: ReturnType<typeof problemOf> }) => {
      void t
        .send(c, 'result', jsonBody(v))
        .catch(t.warn)
        .finally(() => t.end(conv));
    };
    const ch = this.local.channel(call.runnerId);
    if (!ch?.isOpen) {
      answer({
        ok: false,
        error: problemOf(t.lost(call.runnerId, t.replica, 'the session channel is not held here')),
      });
      return;
    }
    ch.call(call.op as SessionOp, decodeBytes(call.args), call.timeoutMs).then(
      (value) => answer({ ok: true, value: encodeBytes(value) }),
      (e: unknown) => answer({ ok: false, error: problemOf(e) }),
    );
  }

  #serveStream(conv: string, peer: string, open: z.infer<typeof OpenFrame>, seqStart: number): void {
    const t = this.transport;
    const window = new Window(t.window);
    const consumed = new Consumed(Math.max(1, Math.floor(t.window / 4)));
    let stream: ExecStream | null = null;
    let ended = false;
    const held: [Kind, Buffer][] = [];
    const apply = (s: ExecStream, kind: Kind, body: Buffer) => {
      if (kind === 'in')
        s.stdin.write(body, () => {
          const ack = consumed.add(body.length);
          if (ack !== null && !ended) void t.send(c, 'ack', jsonBody({ bytes: ack })).catch(() => undefined);
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
      void t
        .send(c, 'exit', jsonBody(body))
        .catch(t.warn)
        .finally(() => t.end(conv));
    };
    const c = t.converse(
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
          t.end(conv);
        },
      },
      seqStart,
    );
    const ch = this.local.channel(open.runnerId);
    if (!ch?.isOpen) {
      finish({ error: t.lost(open.runnerId, t.replica, 'the session channel is not held here') });
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
        void t.send(c, 'opened', jsonBody({ pty: s.pty })).catch(t.warn);
        for (const [kind, body] of held.splice(0)) apply(s, kind, body);
        // Output in order, windowed: the sources pause while WINDOW bytes are unacknowledged.
        const pump = (from: NodeJS.ReadableStream & { pause(): void; resume(): void }, kind: Kind) => {
          from.on('data', (chunk: Buffer) => {
            if (ended) return;
            window.sent += chunk.length;
            void t.send(c, kind, Buffer.from(chunk)).catch(t.warn);
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
}
