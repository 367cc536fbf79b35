// The runner's transport (src/http-api.ts, RunnerTransport): the daemon's calls over node:http on a
// keep-alive agent answer as @everdict/client's did — a 2xx's JSON, a refusal as the ClientError its problem
// makes (code, status, Retry-After), no body as `bad_response`, no answer as `network` — and reuse one socket.
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { ClientError } from '@everdict/client';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpRunnerApi, RunnerTransport } from '../src/http-api.js';
import { withRequestTimeout } from '../src/timed-api.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections(); // a paused upload's connection would hold close() forever
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

async function serve(
  handle: (req: IncomingMessage, body: string, res: ServerResponse) => void,
): Promise<{ url: string; sockets: () => number }> {
  let sockets = 0;
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => handle(req, Buffer.concat(parts).toString('utf8'), res));
  });
  server.on('connection', () => {
    sockets += 1;
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, sockets: () => sockets };
}

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
};

describe('RunnerTransport', () => {
  it('POSTs JSON with the credential and answers the parsed body, on one kept socket', async () => {
    const seen: { method?: string; url?: string; auth?: string; type?: string; body: unknown }[] = [];
    const { url, sockets } = await serve((req, body, res) => {
      seen.push({
        method: req.method,
        url: req.url,
        auth: req.headers.authorization,
        type: req.headers['content-type'],
        body: JSON.parse(body),
      });
      json(res, 200, { lost: [], draining: false });
    });
    const api = new HttpRunnerApi(url, 'cred-1');
    for (let i = 0; i < 5; i++)
      expect(await api.heartbeat([{ runId: 'r1', epoch: 2 }])).toEqual({ lost: [], draining: false });
    await api.events('run/1', 3, []);
    expect(seen[0]).toEqual({
      method: 'POST',
      url: '/runner/v1/heartbeat',
      auth: 'Bearer cred-1',
      type: 'application/json',
      body: { leases: [{ runId: 'r1', epoch: 2 }] },
    });
    expect(seen[5]).toMatchObject({ url: '/runner/v1/runs/run%2F1/events', body: { epoch: 3, events: [] } });
    expect(sockets()).toBe(1);
  });

  it('a refusal is the ClientError of its problem (code, status, Retry-After); no body is bad_response', async () => {
    const { url } = await serve((req, _body, res) => {
      if (req.url === '/runner/v1/leases')
        return json(
          res,
          409,
          { status: 409, code: 'stale_lease', detail: 'epoch 2 is not the lease' },
          { 'retry-after': '7', 'content-type': 'application/problem+json' },
        );
      if (req.url === '/runner/v1/heartbeat') return json(res, 502, 'gateway');
      res.writeHead(200);
      res.end();
    });
    const t = new RunnerTransport(url, 'c');
    const refused = await t.post('/runner/v1/leases', { free: 1, waitMs: 0 }).catch((e) => e);
    expect(refused).toBeInstanceOf(ClientError);
    expect(refused).toMatchObject({ code: 'stale_lease', status: 409, retryAfterSeconds: 7 });
    expect(refused.message).toBe('epoch 2 is not the lease');
    const bad = await t.post('/runner/v1/heartbeat', { leases: [] }).catch((e) => e);
    expect(bad).toMatchObject({ code: 'bad_response', status: 502 });
    const empty = await t.post('/runner/v1/completions', { items: [] }).catch((e) => e);
    expect(empty).toMatchObject({ code: 'bad_response', status: 200 });
    t.close();
  });

  it('a malformed 2xx answer is ClientError bad_response, never a ZodError or a value taken on trust', async () => {
    const { url } = await serve((req, _body, res) => {
      if (req.url === '/runner/v1/leases') return json(res, 200, { leases: [{ runId: 'r1' }] });
      if (req.url === '/runner/v1/heartbeat') return json(res, 200, { lost: 'r1' });
      if (req.url === '/runner/v1/completions') return json(res, 200, { results: [] });
      if (req.url?.startsWith('/runner/v1/runs/r1/artifacts')) {
        res.writeHead(201, { 'content-type': 'application/json' });
        return res.end(req.url.includes('path=a.txt') ? '{"path":"a.txt"}' : 'not json');
      }
      json(res, 404, { status: 404, code: 'not_found' });
    });
    const api = new HttpRunnerApi(url, 'c');
    const fail = (p: Promise<unknown>) =>
      p.then(
        () => 'answered',
        (e: unknown) => e,
      );
    const bodies = () => Readable.from([Buffer.from('x')]);
    const errors = [
      await fail(api.leases(1, 0)),
      await fail(api.heartbeat([])),
      await fail(api.completeMany([{ runId: 'r1', epoch: 1, outputs: {}, attestation: {} }])),
      await fail(api.artifact('r1', 1, 'a.txt', bodies())),
      await fail(api.artifact('r1', 1, 'b.txt', bodies())),
    ];
    for (const e of errors) {
      expect(e).toBeInstanceOf(ClientError);
      expect(e).toMatchObject({ code: 'bad_response' });
    }
    expect((errors[2] as ClientError).message).toContain('0 results for 1 completions');
  });

  it('no answer is ClientError network; an aborted long-poll rejects at once', async () => {
    const { url } = await serve(() => {
      // never answers
    });
    const t = new RunnerTransport(url, 'c');
    const abort = new AbortController();
    const pending = t.post('/runner/v1/leases', { free: 1, waitMs: 25_000 }, { signal: abort.signal });
    setTimeout(() => abort.abort(), 20);
    await expect(pending).rejects.toMatchObject({ code: 'network', status: 0 });
    t.close();
    await new Promise((r) => server!.close(r));
    server = undefined;
    const gone = new RunnerTransport(url, 'c');
    await expect(gone.post('/runner/v1/heartbeat', { leases: [] })).rejects.toMatchObject({
      code: 'network',
      status: 0,
    });
  });

  it("closes an idle kept socket itself 1 s before the server's Keep-Alive hint (never reused as the server closes it)", async () => {
    const { url } = await serve((_req, _body, res) => json(res, 200, { lost: [], draining: false }));
    server!.keepAliveTimeout = 3000; // answers carry `Keep-Alive: timeout=3`
    let closedAt = 0;
    server!.on('connection', (socket) => socket.on('close', () => (closedAt = performance.now())));
    const t = new RunnerTransport(url, 'c');
    await t.post('/runner/v1/heartbeat', { leases: [] });
    const answered = performance.now();
    while (closedAt === 0) await new Promise((r) => setTimeout(r, 50));
    // The client closed it at ≈ 2 s (hint 3 s − 1 s); the server would have at 3 s.
    expect(closedAt - answered).toBeGreaterThan(1500);
    expect(closedAt - answered).toBeLessThan(2800);
    await t.post('/runner/v1/heartbeat', { leases: [] }); // a new socket, no reset
    t.close();
  });
});

describe('HttpRunnerApi under the request timeout', () => {
  it('a call the server never answers fails as `network`, and its request is cut (the socket closed)', async () => {
    let cut: () => void = () => {};
    const socketClosed = new Promise<void>((r) => {
      cut = r;
    });
    const { url } = await serve(() => {
      // never answered: only the runner can end its socket
    });
    // Watched from the accepted connection, not from the handler: on a loaded machine the 100 ms timeout can
    // cut the request before the server has read its body, and a handler that never ran watched nothing.
    server!.on('connection', (socket) => socket.once('close', () => cut()));
    const api = withRequestTimeout(new HttpRunnerApi(url, 'cred-1'), 100);
    await expect(api.heartbeat([])).rejects.toMatchObject({ code: 'network' });
    await socketClosed;
  }, 120_000);
});

describe('an artifact upload under the idle timeout (bytes must move, however long it takes)', () => {
  const MiB = 1024 * 1024;
  const stored = (res: ServerResponse, size: number) =>
    json(res, 201, {
      path: 'big.bin',
      address: 'blake3:abababababababababababababababababababababababababababababababab',
      size,
    });

  /**
   * A server that takes the body slowly, at most `perTick` bytes every 20 ms (each tick's reading then a pause),
   * and takes nothing more past `stallAfterBytes`.
   */
  async function slowServer(
    perTick: number,
    stallAfterBytes = Number.POSITIVE_INFINITY,
  ): Promise<{ url: string; cut: Promise<void>; received: () => number; resume: () => void }> {
    let received = 0;
    let paused: IncomingMessage | undefined;
    let onCut: () => void = () => {};
    const cut = new Promise<void>((r) => {
      onCut = r;
    });
    server = createServer((req, res) => {
      req.socket.once('close', () => onCut());
      let tick = 0;
      req.on('data', (c: Buffer) => {
        received += c.length;
        tick += c.length;
        if (tick < perTick && received < stallAfterBytes) return;
        tick = 0;
        req.pause();
        paused = req;
        if (received < stallAfterBytes) setTimeout(() => req.resume(), 20);
      });
      req.on('end', () => stored(res, received));
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
      cut,
      received: () => received,
      // A paused request never sees its socket end: read on to learn whether the runner cut it.
      resume: () => {
        stallAfterBytes = Number.POSITIVE_INFINITY;
        paused?.resume();
      },
    };
  }

  it('a body that goes up for several times the timeout, with steady progress, is stored', async () => {
    // The body comes slowly (1 MiB every 100 ms: ≥ 6.4 s, over twice the 3 s idle timeout) and the server, in
    // its own process, reads it as it comes — no gap is near the timeout, and nothing is left in the sockets'
    // buffers when the last slice is taken. (A server pacing itself, 4 MiB then 500 ms, failed at load: the
    // kernel's buffers held up to ≈ 36 MiB past the last slice taken, more than it read in the 3 s before the
    // answer was due. A server on this test's loop, 20 ms pauses and a 500 ms timeout, failed at load 30: the
    // starved loop itself was the idleness.)
    const child = await childServer(MiB, 0);
    try {
      const api = withRequestTimeout(new HttpRunnerApi(child.url, 'cred-1'), 3000);
      const chunks = 64;
      const chunk = Buffer.alloc(MiB, 7);
      async function* slowBody(): AsyncGenerator<Buffer> {
        for (let i = 0; i < chunks; i++) {
          await new Promise((r) => setTimeout(r, 100));
          yield chunk;
        }
      }
      const started = performance.now();
      const answer = await api.artifact('r1', 1, 'big.bin', Readable.from(slowBody()));
      const took = performance.now() - started;
      // The size is what the server counted: every byte reached it.
      expect(answer).toEqual({
        path: 'big.bin',
        address: 'blake3:abababababababababababababababababababababababababababababababab',
        size: chunks * MiB,
      });
      // Twice the timeout and more: a fixed bound of 3 s cut it (it did before).
      expect(took).toBeGreaterThan(6000);
    } finally {
      child.stop();
    }
  }, 300_000);

  it('an upload reads its body only as fast as the server takes it (back-pressure: never the whole body held)', async () => {
    // A server in its own process taking 1 MiB per 10 ms; a 256 MiB body made on demand, 1 MiB at a time, as a
    // file streams out of the sandbox's archive (`Driver.files`). The memory this process holds in buffers
    // while it uploads stays well under the body. (fetch's streamed body, used before, held it all here.)
    const child = await childServer(MiB, 10);
    try {
      const api = withRequestTimeout(new HttpRunnerApi(child.url, 'cred-1'), 60_000);
      const base = process.memoryUsage().arrayBuffers;
      let made = 0;
      let held = 0;
      const body = new Readable({
        read() {
          held = Math.max(held, process.memoryUsage().arrayBuffers - base);
          if (made === 256 * MiB) return void this.push(null);
          made += MiB;
          this.push(Buffer.alloc(MiB, 7));
        },
      });
      const answer = await api.artifact('r1', 1, 'big.bin', body);
      expect(answer.size).toBe(256 * MiB);
      // Garbage not yet collected counts too (≈ 50 MiB measured); the whole body held was ≈ 280 MiB.
      expect(held).toBeLessThan(128 * MiB);
    } finally {
      child.stop();
    }
  }, 120_000);

  it('a body that stops moving fails as `network` after the idle timeout, and its request is cut', async () => {
    // The server shares this test's event loop: a timeout near its pauses would fail on a loaded machine.
    const { url, cut, received, resume } = await slowServer(256 * 1024, 2 * MiB);
    const api = withRequestTimeout(new HttpRunnerApi(url, 'cred-1'), 1000);
    const started = performance.now();
    const failed = await api
      .artifact('r1', 1, 'big.bin', Readable.from([Buffer.alloc(64 * MiB, 7)]))
      .catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(failed).toBeInstanceOf(ClientError);
    expect(failed).toMatchObject({ code: 'network', status: 0 });
    expect((failed as Error).message).toMatch(/no bytes moved .* for 1000 ms/);
    expect(received()).toBeGreaterThanOrEqual(2 * MiB);
    expect(received()).toBeLessThan(64 * MiB);
    expect(took).toBeGreaterThanOrEqual(1000);
    resume();
    await cut; // the server's socket closed: only the runner could have ended it
  }, 60_000);

  it("the interval's abort cuts an upload in progress at once, with its reason", async () => {
    const { url, cut, received, resume } = await slowServer(256 * 1024);
    const api = withRequestTimeout(new HttpRunnerApi(url, 'cred-1'), 60_000);
    const abort = new AbortController();
    const pending = api
      .artifact('r1', 1, 'big.bin', Readable.from([Buffer.alloc(64 * MiB, 7)]), abort.signal)
      .catch((e: unknown) => e);
    while (received() < MiB) await new Promise((r) => setTimeout(r, 5));
    abort.abort(new Error('interval killed'));
    expect(await pending).toMatchObject({ message: 'interval killed' });
    resume();
    await cut;
  }, 60_000);

  it('a held event loop is not idleness: bytes the server took meanwhile count once the loop runs again', async () => {
    // The server runs in its own process, reading steadily while this one is held three times the timeout.
    // The timeout is 2 s (200 ms failed at load 30: the server's own process was starved that long), and the
    // hold sleeps in Atomics.wait — the loop is held without taking a core from the server.
    const child = await childServer(MiB, 10);
    try {
      const api = withRequestTimeout(new HttpRunnerApi(child.url, 'cred-1'), 2000);
      let taken = 0;
      async function* body(): AsyncGenerator<Buffer> {
        for (let i = 0; i < 64; i++) {
          taken += MiB;
          yield Buffer.alloc(MiB, 7);
        }
      }
      const pending = api.artifact('r1', 1, 'big.bin', Readable.from(body())).catch((e: unknown) => e);
      while (taken < 8 * MiB) await new Promise((r) => setTimeout(r, 5));
      // Held from the check phase: the next loop iteration runs its due timers (the idle one) before its I/O.
      await new Promise((r) => setImmediate(r));
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 6000); // its idle timer is due when it runs again
      expect(await pending).toEqual({
        path: 'big.bin',
        address: 'blake3:abababababababababababababababababababababababababababababababab',
        size: 64 * MiB,
      });
    } finally {
      child.stop();
    }
  }, 300_000);
});

/** `CHILD_SERVER` in its own process (its pace unaffected by this test's loop): its URL, and a stop. */
async function childServer(perTick: number, pauseMs: number): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['-e', CHILD_SERVER, String(perTick), String(pauseMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString('utf8').trim())));
  });
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill() };
}

/**
 * A server that reads `argv[1]` bytes, then takes nothing for `argv[2]` ms, and so on; answers as the
 * artifact route does, with the size it counted; prints its port.
 */
const CHILD_SERVER = `
const http = require('node:http');
const perTick = Number(process.argv[1]), pauseMs = Number(process.argv[2]);
const server = http.createServer((req, res) => {
  let received = 0, tick = 0;
  req.on('data', (c) => {
    received += c.length; tick += c.length;
    if (tick < perTick) return;
    tick = 0; req.pause(); setTimeout(() => req.resume(), pauseMs);
  });
  req.on('end', () => {
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ path: 'big.bin', address: 'blake3:abababababababababababababababababababababababababababababababab', size: received }));
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;
