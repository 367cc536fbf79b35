// Back-pressure on the exec channel: output nobody reads yet stays on the wire (the socket is not read),
// not in the driver's memory. A local WebSocket server speaks the exec subresource's v5 channel protocol
// (binary frames [1, …stdout], then [3, V1Status] and a close), and pushes 64 MiB at once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SandboxHandle } from '@everdict/placement';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { exitCodeOf, openExec, V5 } from '../src/exec-channel.js';
import type { SandboxTarget } from '../src/sandbox-exec.js';
import { sandboxLogs } from '../src/sandbox-logs.js';

const MiB = 1024 * 1024;
const FRAMES = 64;

/** What a log read needs of a sandbox, pointed at the local exec server. */
const logTarget = (kc: KubeConfig): SandboxTarget => ({
  kc,
  namespace: 'ns',
  pod: 'p',
  handle: {} as SandboxHandle,
  requestTimeoutMs: 30_000,
  internalExecTimeoutMs: 30_000,
  protocol: undefined,
  learned: () => undefined,
  failure: () => undefined,
  settled: async () => undefined,
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 10));
}

describe('the exec channel (review)', () => {
  let server: Server;
  let wss: WebSocketServer;
  let kc: KubeConfig;
  let peer: WebSocket | undefined;

  beforeAll(async () => {
    server = createServer((_req, res) => res.writeHead(404).end());
    wss = new WebSocketServer({ server, handleProtocols: (offered) => (offered.has(V5) ? V5 : false) });
    wss.on('connection', (ws) => {
      peer = ws;
      const frame = Buffer.alloc(MiB + 1, 0x61);
      frame[0] = 1; // stdout
      for (let i = 0; i < FRAMES; i++) ws.send(frame);
      ws.send(
        Buffer.concat([Buffer.from([3]), Buffer.from(JSON.stringify({ metadata: {}, status: 'Success' }))]),
      );
      ws.close(1000);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    peer = undefined;
  });
  afterAll(async () => {
    wss.close();
    await new Promise((r) => server.close(r));
  });

  it('stops reading the connection while stdout is unread, and delivers all of it once it is read', async () => {
    const channel = await openExec(
      kc,
      { namespace: 'ns', pod: 'p', container: 'sandbox', command: () => ['yes'], stdin: false, tty: false },
      10_000,
    );
    // either the channel holds the connection (the server keeps most of the 64 MiB), or the server has
    // handed everything to the kernel and the client took it in (no back-pressure)
    await until(() => channel.held || (peer !== undefined && peer.bufferedAmount === 0));
    expect(channel.stdout.readableLength).toBeLessThan(4 * MiB);
    expect(peer?.bufferedAmount ?? 0).toBeGreaterThan(16 * MiB);
    expect(channel.held).toBe(true);
    let total = 0;
    for await (const chunk of channel.stdout) total += (chunk as Buffer).length;
    expect(total).toBe(FRAMES * MiB);
    const status = await channel.status;
    expect(status && exitCodeOf(status)).toBe(0);
  });

  it('reads the sandbox log file only as fast as its caller takes it (no whole file in memory)', async () => {
    const paused = vi.spyOn(WebSocket.prototype, 'pause');
    const reader = sandboxLogs(async () => logTarget(kc), { follow: false })[Symbol.asyncIterator]();
    const first = await reader.next();
    let total = first.done ? 0 : first.value.byteLength;
    // the caller stops reading here: either the connection is held, or everything came in regardless
    await until(() => paused.mock.calls.length > 0 || (peer !== undefined && peer.bufferedAmount === 0));
    expect(peer?.bufferedAmount ?? 0).toBeGreaterThan(16 * MiB);
    for (let next = await reader.next(); !next.done; next = await reader.next())
      total += next.value.byteLength;
    expect(total).toBe(FRAMES * MiB);
  });

  it('cuts the connection of a log read its caller gives up while it is held (no close handshake behind unread data)', async () => {
    const paused = vi.spyOn(WebSocket.prototype, 'pause');
    const reader = sandboxLogs(async () => logTarget(kc), { follow: false })[Symbol.asyncIterator]();
    await reader.next();
    await until(() => paused.mock.calls.length > 0 && peer !== undefined);
    const server = peer as WebSocket;
    const closed = new Promise<'closed'>((r) => server.once('close', () => r('closed')));
    await reader.return?.();
    // a close handshake behind the held, unread data would end only at ws's 30 s close timeout
    const limit = new Promise<'still open'>((r) => setTimeout(() => r('still open'), 10_000).unref());
    expect(await Promise.race([closed, limit])).toBe('closed');
  });
});
