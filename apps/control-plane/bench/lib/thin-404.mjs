// A server answering every request with the 404 problem the shipped server sends for an unknown route (same
// headers: request id, nosniff, problem+json): `bare` on node:http alone, `hono` through hono and
// @hono/node-server (the framework and adapter the shipped server runs on) with nothing else. For adapter-cpu.mjs.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const problem = (path) => ({
  type: 'about:blank',
  title: 'route_not_found',
  status: 404,
  detail: `no route for GET ${path}`,
});
const ready = (port) => console.log(JSON.stringify({ msg: 'control plane listening', port }));

if (process.argv[2] === 'hono') {
  const app = new Hono();
  app.notFound((c) => {
    c.header('x-request-id', randomUUID());
    c.header('x-content-type-options', 'nosniff');
    return c.json(problem(c.req.path), 404, { 'content-type': 'application/problem+json' });
  });
  serve({ fetch: app.fetch, port: 0 }, (info) => ready(info.port));
} else {
  const server = http.createServer((req, res) => {
    const body = JSON.stringify(problem(req.url));
    res.writeHead(404, {
      'content-type': 'application/problem+json',
      'content-length': Buffer.byteLength(body),
      'x-request-id': randomUUID(),
      'x-content-type-options': 'nosniff',
    });
    res.end(body);
  });
  server.listen(0, () => ready(server.address().port));
}
