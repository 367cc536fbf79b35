// The client side of the exec subresource's WebSocket channel protocol. It offers v5.channel.k8s.io alone
// first and falls back to v4.channel.k8s.io when the server refuses the upgrade (a cluster older than
// 1.30); the protocol that worked is remembered per driver. Authentication and TLS come from the
// KubeConfig (client-node's own applyToHTTPSOptions). Frames: [channel, …bytes] — 0 stdin, 1 stdout,
// 2 stderr, 3 the V1Status that ends the command, 4 resize; v5's [255, 0] closes stdin.
import { PassThrough } from 'node:stream';
import type { KubeConfig, V1Status } from '@kubernetes/client-node';
import WebSocket from 'ws';

export const V5 = 'v5.channel.k8s.io';
export const V4 = 'v4.channel.k8s.io';
export type ChannelProtocol = typeof V5 | typeof V4;

export interface ExecRequest {
  namespace: string;
  pod: string;
  container: string;
  /** The command for the protocol the connection will speak (v4 cannot close stdin, so it may differ). */
  command: (protocol: ChannelProtocol) => string[];
  stdin: boolean;
  tty: boolean;
}

export interface ExecChannel {
  readonly protocol: ChannelProtocol;
  readonly stdout: PassThrough;
  readonly stderr: PassThrough;
  write(data: Uint8Array): void;
  /** v5: tells the command its stdin ended. v4 cannot say so without closing the connection: returns false. */
  closeStdin(): boolean;
  resize(cols: number, rows: number): void;
  /**
   * Whether the connection is not being read because stdout or stderr holds unread output (back-pressure:
   * the channel buffers at most about a stream's high-water mark and one frame, never the whole output).
   */
  readonly held: boolean;
  /** The final status, or null when the connection ended without one (the pod went away). */
  readonly status: Promise<V1Status | null>;
  close(): void;
  /** Cut the connection at once (no close handshake: the peer may never answer one). */
  terminate(): void;
}

export class UpgradeRefused extends Error {
  constructor(
    readonly statusCode: number | undefined,
    /** The response body as sent (empty for a bare handshake refusal). */
    readonly body: string,
  ) {
    super(body || `HTTP ${statusCode}`);
    this.name = 'UpgradeRefused';
  }
}

function execPath(req: ExecRequest, protocol: ChannelProtocol): string {
  const q = new URLSearchParams();
  for (const part of req.command(protocol)) q.append('command', part);
  q.set('container', req.container);
  q.set('stdin', String(req.stdin));
  q.set('stdout', 'true');
  q.set('stderr', String(!req.tty));
  q.set('tty', String(req.tty));
  return `/api/v1/namespaces/${encodeURIComponent(req.namespace)}/pods/${encodeURIComponent(req.pod)}/exec?${q}`;
}

async function connect(
  kc: KubeConfig,
  req: ExecRequest,
  protocol: ChannelProtocol,
  timeoutMs: number,
): Promise<WebSocket> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  const url = cluster.server.replace(/^http/, 'ws') + execPath(req, protocol);
  const options: WebSocket.ClientOptions & Record<string, unknown> = {};
  await kc.applyToHTTPSOptions(options);
  // without it, an apiserver that never answers the upgrade holds the exec (and its caller) forever
  options.handshakeTimeout = timeoutMs;
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, [protocol], options);
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (d: Buffer) => {
        body += d.toString();
      });
      response.on('end', () => reject(new UpgradeRefused(response.statusCode, body)));
    });
    socket.once('error', reject);
  });
}

/** Opens an exec channel: v5 first, v4 if the server refuses v5; `preferred` skips a known-failing offer. */
export async function openExec(
  kc: KubeConfig,
  req: ExecRequest,
  timeoutMs: number,
  preferred: ChannelProtocol = V5,
): Promise<ExecChannel> {
  let socket: WebSocket;
  try {
    socket = await connect(kc, req, preferred, timeoutMs);
  } catch (error) {
    if (!(preferred === V5 && error instanceof UpgradeRefused && isProtocolRefusal(error))) throw error;
    socket = await connect(kc, req, V4, timeoutMs);
  }
  return channelOn(socket);
}

/**
 * A refusal that is about the offered protocol (not a missing pod, a stopped container or RBAC). A kubelet
 * that does not speak v5 (a cluster before 1.30, or with the apiserver's translation off) refuses in its
 * websocket handshake, which answers a bare `403 Forbidden` with no body; the apiserver's own refusals
 * (forbidden by RBAC, pod not found, container not running) always carry a JSON Status.
 */
export function isProtocolRefusal(error: UpgradeRefused): boolean {
  if (error.statusCode === 404 || error.statusCode === 401) return false;
  if (/protocol/i.test(error.message)) return true;
  return (error.statusCode === 403 || error.statusCode === 400) && !isStatusBody(error.body);
}

function isStatusBody(body: string): boolean {
  try {
    return (JSON.parse(body) as { kind?: unknown } | null)?.kind === 'Status';
  } catch {
    return false;
  }
}

function channelOn(socket: WebSocket): ExecChannel {
  const protocol = socket.protocol as ChannelProtocol;
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let resolveStatus!: (s: V1Status | null) => void;
  const status = new Promise<V1Status | null>((resolve) => {
    resolveStatus = resolve;
  });
  let received: V1Status | null = null;
  // Back-pressure: a stream whose reader is behind stops the socket (TCP then holds the sender back, as a
  // child process's pipe would); reading resumes once both streams have drained.
  let held = false;
  const hold = () => {
    if (held) return;
    held = true;
    socket.pause();
  };
  const release = () => {
    if (!held || stdout.writableNeedDrain || stderr.writableNeedDrain) return;
    held = false;
    socket.resume();
  };
  stdout.on('drain', release);
  stderr.on('drain', release);
  socket.on('message', (raw: Buffer, isBinary: boolean) => {
    if (!isBinary || raw.length === 0) return;
    const data = raw.subarray(1);
    switch (raw[0]) {
      case 1:
        if (!stdout.write(data)) hold();
        break;
      case 2:
        if (!stderr.write(data)) hold();
        break;
      case 3:
        try {
          received = JSON.parse(data.toString('utf8')) as V1Status;
        } catch {
          received = { status: 'Failure', message: data.toString('utf8') };
        }
        break;
    }
  });
  socket.on('close', () => {
    stdout.end();
    stderr.end();
    resolveStatus(received);
  });
  socket.on('error', () => {});
  const send = (channel: number, data: Uint8Array) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(Buffer.concat([Buffer.from([channel]), data]));
  };
  return {
    protocol,
    stdout,
    stderr,
    get held() {
      return held;
    },
    write: (data) => send(0, data),
    closeStdin: () => {
      if (protocol !== V5) return false;
      send(255, new Uint8Array([0]));
      return true;
    },
    resize: (cols, rows) => send(4, Buffer.from(JSON.stringify({ Width: cols, Height: rows }))),
    status,
    close: () => socket.close(),
    terminate: () => socket.terminate(),
  };
}

/** The exit code a final status carries: 0 for Success, the ExitCode cause for NonZeroExitCode. */
export function exitCodeOf(status: V1Status): number | undefined {
  if (status.status === 'Success') return 0;
  if (status.reason !== 'NonZeroExitCode') return undefined;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  const code = Number(cause?.message);
  return Number.isInteger(code) ? code : undefined;
}
