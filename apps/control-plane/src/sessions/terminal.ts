// The terminal: `GET /runs/:id/terminal?ticket=…[&cols=&rows=]` upgraded to a WebSocket on the node server's
// `upgrade` event (Hono answers the same path without an upgrade with 426). The ticket is the credential
// (browsers cannot set headers on a WebSocket): redeemed once, on any replica. Then a shell runs in the
// session's sandbox through the driver's pty stream:
//   binary frames   client → server: raw stdin;  server → client: raw terminal output
//   text frames     {"type":"resize","cols","rows"} (client) · {"type":"exit","code"} (server, then close)
// Every byte each way goes to the session's trajectory; traffic keeps the session from idling. Bytes the
// trajectory store refuses to record are not lost silently (as an exec whose record is refused answers 503):
// the terminal sends {"type":"error","code":"storage_unavailable","reason":"trajectory_unavailable"} and
// closes 1013 (try again later), the shell is killed, a warning is logged, and the trajectory gets an
// `everdict/terminal-gap` event counting the unrecorded bytes each way (once the store takes it).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { TerminalSize } from '@everdict/placement';
import { type WebSocket, WebSocketServer } from 'ws';
import { z } from 'zod';
import { problem } from '../http/problem.js';
import { refuseUpgrade, refuseUpgradeFor } from '../http/upgrade-refusal.js';
import { markActive } from './rows.js';
import type { SessionService } from './service.js';

const PATH = /^\/runs\/([^/]+)\/terminal$/;
const Control = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('resize'), cols: TerminalSize.shape.cols, rows: TerminalSize.shape.rows }),
]);

export interface TerminalOptions {
  /** The shell started in the sandbox (default `sh -i`). */
  readonly command?: readonly string[];
  readonly onError?: (e: unknown) => void;
  /**
   * Watch the key that minted the ticket (AuthService.watchKeyId): its revocation ends the terminal — an error
   * frame `{type: "error", code: "unauthorized"}`, close 1008, the shell killed. Absent: nothing is watched.
   */
  readonly watchKey?: (keyId: string, onRevoked: () => void) => () => void;
}

/**
 * The node server's upgrade listener for terminals: `server.on('upgrade', terminal.upgrade)`. Returns false
 * (and leaves the socket alone) for any other path, so it composes with other upgrade handlers.
 */
export function terminalServer(sessions: SessionService, opts: TerminalOptions = {}) {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  const command = opts.command ?? ['sh', '-i'];
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const url = new URL(req.url ?? '/', 'http://terminal');
    const m = PATH.exec(url.pathname);
    if (!m) return false;
    const runId = decodeURIComponent(m[1] ?? '');
    const ticket = url.searchParams.get('ticket') ?? '';
    const size = TerminalSize.safeParse({
      cols: Number(url.searchParams.get('cols') ?? 80),
      rows: Number(url.searchParams.get('rows') ?? 24),
    });
    if (!size.success) {
      refuseUpgrade(socket, problem('validation_failed', 'cols and rows are positive integers ≤ 10000'));
      return true;
    }
    sessions.redeemTerminal(runId, ticket).then(
      (grant) => {
        wss.handleUpgrade(req, socket, head, (ws) => {
          attach(sessions, ws, runId, grant, command, size.data, opts.watchKey).catch((e: unknown) => {
            opts.onError?.(e);
            ws.close(1011, 'terminal failed');
          });
        });
      },
      (e: unknown) => refuseUpgradeFor(socket, e, (defect) => opts.onError?.(defect)),
    );
    return true;
  };
  const close = () =>
    new Promise<void>((r) => {
      for (const c of wss.clients) c.terminate();
      wss.close(() => r());
    });
  return { upgrade, close };
}

async function attach(
  sessions: SessionService,
  ws: WebSocket,
  runId: string,
  grant: Awaited<ReturnType<SessionService['redeemTerminal']>>,
  command: readonly string[],
  size: { cols: number; rows: number },
  watchKey: TerminalOptions['watchKey'],
): Promise<void> {
  const { deps, log } = sessions.core;
  const { tenant, compute } = grant;
  // Frames a client sends right after the upgrade arrive before the shell is up: held, then replayed.
  type Frame = [Buffer | ArrayBuffer | Buffer[], boolean];
  const early: Frame[] = [];
  const hold = (data: Frame[0], isBinary: boolean) => early.push([data, isBinary]);
  ws.on('message', hold);
  const stream = await compute.driver.stream(grant.handle, [...command], { tty: true, size });
  ws.off('message', hold);
  let lastMark = 0;
  const traffic = () => {
    const now = deps.clock();
    if (now.getTime() - lastMark < 1000) return;
    lastMark = now.getTime();
    void markActive(deps.db, tenant, runId, now).catch(() => undefined);
  };
  // The trajectory gets the bytes in order, in small batches per direction. A batch the store refuses ends
  // the terminal: nothing more is shown (or typed) that the trajectory would not have.
  let pending: { dir: 'in' | 'out'; chunks: Buffer[] } | null = null;
  let writing = Promise.resolve();
  const lost = { in: 0, out: 0, since: '' };
  let failed = false;
  const refused = (dir: 'in' | 'out', bytes: number, e: unknown) => {
    lost[dir] += bytes;
    if (failed) return;
    failed = true;
    lost.since = deps.clock().toISOString();
    deps.log('warn', 'sessions: terminal bytes not recorded in the trajectory; terminal closed', {
      tenant,
      runId,
      dir,
      bytes,
      error: String(e),
    });
    if (ws.readyState === ws.OPEN) {
      ws.send(
        JSON.stringify({
          type: 'error',
          code: 'storage_unavailable',
          reason: 'trajectory_unavailable',
          message: 'terminal output could not be recorded in the session trajectory; reconnect to retry',
        }),
      );
      ws.close(1013, 'trajectory_unavailable');
    }
    stream.kill();
  };
  const flush = () => {
    const batch = pending;
    pending = null;
    if (!batch) return;
    const bytes = Buffer.concat(batch.chunks);
    writing = writing.then(() =>
      log.terminal(tenant, runId, batch.dir, bytes).then(
        () => undefined,
        (e: unknown) => refused(batch.dir, bytes.byteLength, e),
      ),
    );
  };
  const record = (dir: 'in' | 'out', chunk: Buffer) => {
    if (pending && pending.dir !== dir) flush();
    pending ??= { dir, chunks: [] };
    pending.chunks.push(chunk);
    if (pending.chunks.reduce((n, c) => n + c.length, 0) >= 16 * 1024) flush();
  };
  const timer = setInterval(flush, 200);

  stream.stdout.on('data', (chunk: Buffer) => {
    if (failed) return;
    traffic();
    record('out', chunk);
    if (ws.readyState === ws.OPEN) ws.send(chunk, { binary: true });
  });
  stream.stderr.on('data', (chunk: Buffer) => {
    if (failed) return;
    record('out', chunk);
    if (ws.readyState === ws.OPEN) ws.send(chunk, { binary: true });
  });
  const onFrame = (data: Frame[0], isBinary: boolean) => {
    const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    if (failed) return;
    traffic();
    if (isBinary) {
      record('in', buf);
      stream.stdin.write(buf);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(buf.toString('utf8'));
    } catch {
      parsed = null;
    }
    const control = Control.safeParse(parsed);
    if (!control.success) {
      ws.close(1007, 'text frames are JSON control messages: {"type":"resize","cols","rows"}');
      return;
    }
    stream.resize({ cols: control.data.cols, rows: control.data.rows });
  };
  for (const [data, isBinary] of early.splice(0)) onFrame(data, isBinary);
  ws.on('message', onFrame);
  ws.on('close', () => stream.kill());
  ws.on('error', () => stream.kill());
  // The ticket was the key's grant: a revoked key's terminal ends, as its next request would be refused.
  const unwatch = watchKey?.(grant.actor, () => {
    if (ws.readyState === ws.OPEN) {
      ws.send(JSON.stringify({ type: 'error', code: 'unauthorized', message: 'the API key was revoked' }));
      ws.close(1008, 'api key revoked');
    }
    stream.kill();
  });
  const exit = await stream.exit.finally(() => unwatch?.());
  clearInterval(timer);
  flush();
  await writing;
  if (lost.in + lost.out > 0)
    await log.terminalGap(tenant, runId, lost, 'trajectory_unavailable').catch((e: unknown) =>
      deps.log('warn', 'sessions: terminal gap not recorded in the trajectory', {
        tenant,
        runId,
        ...lost,
        error: String(e),
      }),
    );
  if (ws.readyState === ws.OPEN) {
    ws.send(JSON.stringify({ type: 'exit', code: exit.exitCode }));
    ws.close(1000, 'exited');
  }
}
