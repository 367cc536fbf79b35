// After a 413 the keep-alive connection still serves the next request: a real server, a real keep-alive
// agent holding one socket, bodies declared and streamed past the limit.
import http from 'node:http';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../app.js';
import { DRAIN_LIMIT_BYTES } from './body-limit.js';
import { ADMIN_KEY, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;
let server: http.Server;
let port = 0;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

beforeAll(async () => {
  t = await testApp();
  const { app } = buildApp({ services: t.core.services, health: () => t.core.health(), maxBodyBytes: 2048 });
  server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as http.Server;
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as { port: number }).port;
}, 300_000);
afterAll(async () => {
  agent.destroy();
  await new Promise((r) => server?.close(r));
  await t?.close();
});

interface Answer {
  status: number;
  reused: boolean;
  body: string;
}

/** One request on the agent's single socket; `chunks` are written one by one (chunked when no length). */
function request(method: string, path: string, chunks: string[] = [], declare = true): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const size = chunks.reduce((n, c) => n + Buffer.byteLength(c), 0);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: {
          authorization: `Bearer ${ADMIN_KEY}`,
          ...(chunks.length ? { 'content-type': 'application/json' } : {}),
          ...(chunks.length && declare ? { 'content-length': String(size) } : {}),
        },
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket, body }));
      },
    );
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

const big = (bytes: number) => [`{"kind":"analysis","subject":{"pad":"`, 'x'.repeat(bytes), '"}}'];

describe('413 on a keep-alive connection', () => {
  it('the next request on the same socket is served, whether the body was declared or streamed', async () => {
    expect((await request('GET', '/healthz')).status).toBe(200);
    for (const [bytes, declare] of [
      [100_000, true],
      [5_000_000, true],
      [5_000_000, false],
    ] as const) {
      const refused = await request('POST', '/runs', big(bytes), declare);
      expect(refused.status, `${bytes} ${declare}`).toBe(413);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'body_too_large' });
      expect(refused.reused).toBe(true);
      const next = await request('GET', '/healthz');
      expect(next.status).toBe(200);
      expect(next.reused, `after a ${bytes}-byte ${declare ? 'declared' : 'streamed'} body`).toBe(true);
    }
    const created = await request('POST', '/runs', [
      JSON.stringify({ kind: 'analysis', subject: { config: {} } }),
    ]);
    expect(created.status).toBe(201);
    expect(created.reused).toBe(true);
  });

  it(`a body declared past ${DRAIN_LIMIT_BYTES} bytes is not read: its 413 closes the connection`, async () => {
    const own = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answer = await new Promise<{ status: number; connection: string | undefined }>(
        (resolve, reject) => {
          const req = http.request(
            {
              host: '127.0.0.1',
              port,
              method: 'POST',
              path: '/runs',
              agent: own,
              headers: {
                authorization: `Bearer ${ADMIN_KEY}`,
                'content-type': 'application/json',
                'content-length': String(DRAIN_LIMIT_BYTES + 1),
              },
            },
            (res) => {
              res.resume();
              res.on('end', () => {
                resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
                req.destroy();
              });
            },
          );
          req.on('error', (e: NodeJS.ErrnoException) => {
            if (e.code !== 'ECONNRESET' && e.code !== 'EPIPE') reject(e);
          });
          req.write('{"kind":"analysis"');
        },
      );
      expect(answer).toEqual({ status: 413, connection: 'close' });
    } finally {
      own.destroy();
    }
  });
});
