// `everdict sandbox shell <id>`: an interactive terminal into a held-open session over the ticket flow —
// `POST /runs/:id/terminal-ticket`, then the `GET /runs/:id/terminal?ticket=&cols=&rows=` WebSocket. Binary
// frames carry raw stdin (out) and raw terminal output (in); text frames are JSON: `{"type":"resize",cols,rows}`
// (sent at open and on every resize of the local terminal, i.e. SIGWINCH) and `{"type":"exit",code}` (received;
// the remote shell's exit status becomes this command's exit code, as with ssh).
import { ClientError } from '@everdict/client';
import WebSocket from 'ws';
import { type Context, requestTimeoutMs } from '../context.js';
import { CliError } from '../errors.js';

type Size = { cols: number; rows: number };

/** The local terminal's size (the remote pty's size); 80×24 when stdout is not a terminal. */
function sizeOf(stdout: Context['io']['stdout']): Size {
  const s = stdout as { columns?: number; rows?: number };
  const ok = (n: number | undefined) => typeof n === 'number' && Number.isInteger(n) && n > 0 && n <= 10_000;
  return { cols: ok(s.columns) ? (s.columns as number) : 80, rows: ok(s.rows) ? (s.rows as number) : 24 };
}

/** The remote exit status as this command's exit code: 0–255 as it is; no status (a signal) → 1. */
export function exitCodeOf(code: unknown): number {
  return typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 255 ? code : 1;
}

/**
 * Raw mode on a terminal stdin (every key goes to the remote shell, Ctrl-C included), restored on the way out.
 * Stdin that is not a terminal (a pipe) is forwarded as it is; its end is sent as Ctrl-D, so the remote shell
 * sees end of input and exits.
 */
export async function openShell(ctx: Context, runId: string): Promise<number> {
  const { ticket } = await ctx.call<{ ticket: string }>(
    'POST',
    `/runs/${encodeURIComponent(runId)}/terminal-ticket`,
    {},
  );
  const { stdin, stdout } = ctx.io;
  const first = sizeOf(stdout);
  const base = ctx.url.replace(/^http/, 'ws');
  // The handshake is bounded like any call (EVERDICT_REQUEST_TIMEOUT_MS): a control plane that accepts the
  // socket but never upgrades it is `unavailable`, not a wait forever.
  const ws = new WebSocket(
    `${base}/runs/${encodeURIComponent(runId)}/terminal?ticket=${encodeURIComponent(ticket)}&cols=${first.cols}&rows=${first.rows}`,
    { handshakeTimeout: requestTimeoutMs(ctx.io.env) },
  );
  const interrupt = ctx.io.signal;
  const tty = stdin.isTTY === true;
  return new Promise<number>((resolve, reject) => {
    let exitCode: number | null = null;
    let settled = false;
    let raw = false;
    const send = (data: Buffer | string) => {
      if (ws.readyState === WebSocket.OPEN) ws.send(data);
    };
    const onData = (chunk: Buffer | string) => send(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    const onEnd = () => send(Buffer.from([0x04]));
    const onResize = () => send(JSON.stringify({ type: 'resize', ...sizeOf(stdout) }));
    // Ctrl-C reaching this process (a terminal stdin in raw mode sends it to the remote shell instead; a
    // pipe, SIGTERM, or a handshake still under way): the terminal is closed, exit 130.
    const onInterrupt = () => {
      finish(() => reject(new CliError('interrupted', `the terminal of ${runId} was closed (interrupted)`)));
      ws.terminate();
    };
    const cleanup = () => {
      interrupt?.removeEventListener('abort', onInterrupt);
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdout.off('resize', onResize);
      process.off('SIGWINCH', onResize);
      if (raw) stdin.setRawMode?.(false);
      raw = false;
      stdin.pause();
    };
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      cleanup();
      outcome();
    };
    if (interrupt?.aborted) {
      onInterrupt();
      return;
    }
    interrupt?.addEventListener('abort', onInterrupt, { once: true });
    ws.on('open', () => {
      if (tty && stdin.setRawMode) {
        stdin.setRawMode(true);
        raw = true;
      }
      stdin.on('data', onData);
      if (!tty) stdin.once('end', onEnd);
      stdin.resume();
      // A terminal stdout emits 'resize' on SIGWINCH (after it has re-read its size); otherwise listen to the
      // signal itself, for a stdout that is a pipe while the process still has a controlling terminal.
      if ((stdout as { isTTY?: boolean }).isTTY) stdout.on('resize', onResize);
      else process.on('SIGWINCH', onResize);
      onResize();
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        stdout.write(data as Buffer);
        return;
      }
      try {
        const msg = JSON.parse(String(data)) as { type?: string; code?: unknown };
        if (msg.type === 'exit') exitCode = exitCodeOf(msg.code);
      } catch {
        /* a control frame that is not JSON: not ours to act on */
      }
    });
    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      res.on('end', () => {
        // The upgrade refused with problem+json (`title` is its code): a refusal like any other answer.
        let code = 'bad_response';
        let detail = body.trim() || `HTTP ${status}`;
        try {
          const p = JSON.parse(body) as { code?: string; title?: string; detail?: string };
          code = p.code ?? p.title ?? code;
          detail = p.detail ?? detail;
        } catch {
          /* not problem+json */
        }
        finish(() => reject(new ClientError(code, status, `terminal: ${detail}`)));
        ws.terminate();
      });
    });
    ws.on('close', (code, reason) => {
      if (exitCode !== null) finish(() => resolve(exitCode as number));
      else
        finish(() =>
          reject(
            new CliError(
              'unavailable',
              `the terminal closed (${code}${reason.length ? ` ${reason.toString('utf8')}` : ''}) without an exit status`,
            ),
          ),
        );
    });
    ws.on('error', (e) => finish(() => reject(new CliError('unavailable', `terminal: ${e.message}`))));
  });
}
