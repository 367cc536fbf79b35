// The pod subresources that stream: log (text/plain, `follow=true` until the container stops) and exec
// (a WebSocket upgrade; the protocol is the first one the client offers that the server speaks).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocketServer } from 'ws';
import { type ExecProtocol, runExecSession } from './exec-session.js';
import type { Query } from './http.js';
import type { Kubelet } from './pods/kubelet.js';
import type { ResourceRoute } from './routes.js';
import { type ApiStatus, errors } from './status.js';

export function handleLog(
  kubelet: Kubelet,
  route: ResourceRoute,
  req: IncomingMessage,
  res: ServerResponse,
  query: Query,
): void {
  if (req.method !== 'GET') throw errors.methodNotAllowed();
  const buffer = kubelet.log(
    route.namespace ?? 'default',
    route.name ?? '',
    query.get('container'),
    query.flag('previous'),
  );
  const sinceSeconds = query.int('sinceSeconds');
  const sinceTime = query.get('sinceTime');
  const spec = {
    timestamps: query.flag('timestamps'),
    tailLines: query.int('tailLines'),
    limitBytes: query.int('limitBytes'),
    sinceTime:
      sinceSeconds !== undefined
        ? new Date(Date.now() - sinceSeconds * 1000)
        : sinceTime
          ? new Date(sinceTime)
          : undefined,
  };
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
  const initial = buffer.read(spec);
  res.write(initial);
  let remaining = spec.limitBytes === undefined ? Number.POSITIVE_INFINITY : spec.limitBytes - initial.length;
  if (!query.flag('follow') || remaining <= 0) return void res.end();
  const stop = buffer.follow((chunk) => {
    if (chunk === null) return void res.end();
    let data = buffer.render([chunk], spec);
    if (data.length > remaining) data = data.subarray(0, remaining);
    remaining -= data.length;
    res.write(data);
    if (remaining <= 0) {
      stop();
      res.end();
    }
  });
  req.on('close', stop);
}

function rejectUpgrade(socket: Duplex, status: ApiStatus): void {
  const body = JSON.stringify(status);
  const text = status.code === 403 ? 'Forbidden' : status.code === 404 ? 'Not Found' : 'Bad Request';
  socket.end(
    `HTTP/1.1 ${status.code} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** The first protocol the client offers that the server speaks (the kubelet honours the client's order). */
export function negotiate(
  offered: readonly string[],
  supported: readonly ExecProtocol[],
): ExecProtocol | undefined {
  return offered.find((p): p is ExecProtocol => (supported as readonly string[]).includes(p));
}

/** An exec upgrade request; errors before the upgrade are answered as HTTP Status responses. */
export async function handleExecUpgrade(
  kubelet: Kubelet,
  wss: WebSocketServer,
  supported: readonly ExecProtocol[],
  route: ResourceRoute,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  query: Query,
): Promise<void> {
  const offered = (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const protocol = negotiate(offered, supported);
  if (!protocol) {
    // The kubelet's wsstream handshake refuses through golang.org/x/net/websocket, which writes a bare
    // `403 Forbidden` — no body, no Status, no Content-Length — and closes (the apiserver proxies it as is).
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    return;
  }
  const argv = query.all('command');
  const streams = {
    stdin: query.flag('stdin'),
    stdout: query.flag('stdout'),
    stderr: query.flag('stderr'),
    tty: query.flag('tty'),
  };
  let process: Awaited<ReturnType<Kubelet['exec']>>;
  try {
    if (argv.length === 0) throw errors.badRequest('you must specify at least one command for the container');
    if (!streams.stdin && !streams.stdout && !streams.stderr)
      throw errors.badRequest('you must specify at least 1 of stdin, stdout, stderr');
    process = await kubelet.exec(
      route.namespace ?? 'default',
      route.name ?? '',
      query.get('container'),
      argv,
      {
        stdin: streams.stdin,
        tty: streams.tty,
      },
    );
  } catch (error) {
    const status = (error as { status?: ApiStatus }).status ?? errors.internal(String(error)).status;
    rejectUpgrade(socket, status);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => runExecSession(ws, protocol, process, streams, argv));
}
