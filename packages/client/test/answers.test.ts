// How the client reads answers that are not the happy path, from a real HTTP server on a real socket: a body
// that breaks off, a 2xx that is not JSON, a Retry-After as an HTTP-date, a problem with an odd member. Each
// arrives as a ClientError with the right code, never a bare TypeError/SyntaxError or a lost refusal code.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientError, createClient, dataOf, parseRetryAfter } from '../src/index.js';

const PROBLEM = 'application/problem+json';
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    switch (req.headers['x-case']) {
      case 'ok':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
        return;
      case 'truncated-ok':
      case 'truncated-refusal':
        res.writeHead(req.headers['x-case'] === 'truncated-ok' ? 200 : 409, {
          'content-type': 'application/json',
          'content-length': '400',
        });
        res.write('{"items":[');
        setImmediate(() => res.socket?.destroy());
        return;
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>login</title>');
        return;
      case 'retry-date':
        res
          .writeHead(503, {
            'content-type': PROBLEM,
            'retry-after': new Date(Date.now() + 30_000).toUTCString(),
          })
          .end(JSON.stringify({ status: 503, code: 'database_unavailable', title: 'Service Unavailable' }));
        return;
      case 'odd-problem':
        res.writeHead(429, { 'content-type': PROBLEM, 'retry-after': '7' }).end(
          JSON.stringify({
            type: 'urn:everdict:problem:capacity_exceeded',
            title: 'Too Many Requests',
            code: 'capacity_exceeded',
            rule: 'queue_depth',
            issues: 'see details',
            details: { limit: 3 },
          }),
        );
        return;
      case 'validation':
        res.writeHead(400, { 'content-type': PROBLEM }).end(
          JSON.stringify({
            type: 'urn:everdict:problem:validation_failed',
            title: 'Bad Request',
            status: 400,
            code: 'validation_failed',
            detail: 'query parameter "limit": Invalid input: expected number, received NaN',
            issues: [{ code: 'invalid_type', path: ['limit'], message: 'Invalid input', in: 'query' }],
          }),
        );
        return;
      default:
        res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const clientFor = (c: string) => createClient({ baseUrl, headers: { 'x-case': c } });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('answers off the happy path arrive as ClientErrors', () => {
  it('a well-formed 2xx still reads as data', async () => {
    expect(dataOf(await clientFor('ok').GET('/healthz', {}))).toEqual({ status: 'ok' });
  });
  it('a 2xx whose body breaks off is `network`', async () => {
    const err = await failure(clientFor('truncated-ok').GET('/healthz', {}));
    expect(err).toBeInstanceOf(ClientError);
    expect(err).toMatchObject({ code: 'network', status: 0 });
  });
  it('a refusal whose body breaks off is `network`', async () => {
    const err = await failure(clientFor('truncated-refusal').GET('/healthz', {}));
    expect(err).toBeInstanceOf(ClientError);
    expect(err).toMatchObject({ code: 'network' });
  });
  it('a 2xx that is not JSON (an HTML page) is `bad_response` with its status', async () => {
    const err = await failure(clientFor('html').GET('/healthz', {}));
    expect(err).toBeInstanceOf(ClientError);
    expect(err).toMatchObject({ code: 'bad_response', status: 200 });
  });
  it('a Retry-After given as an HTTP-date is honoured as seconds', async () => {
    const err = (await failure(clientFor('retry-date').GET('/healthz', {}))) as ClientError;
    expect(err).toMatchObject({ code: 'database_unavailable', status: 503 });
    expect(err.retryAfterSeconds).toBeGreaterThanOrEqual(28);
    expect(err.retryAfterSeconds).toBeLessThanOrEqual(31);
  });
  it('a problem with an odd optional member keeps its code, rule and Retry-After', async () => {
    const err = (await failure(clientFor('odd-problem').GET('/healthz', {}))) as ClientError;
    expect(err).toBeInstanceOf(ClientError);
    expect(err).toMatchObject({ code: 'capacity_exceeded', status: 429, retryAfterSeconds: 7 });
    expect(err.problem).toMatchObject({ status: 429, rule: 'queue_depth', details: { limit: 3 } });
    expect(err.problem?.issues).toBeUndefined();
  });
  it('a schema refusal keeps the field it names: the detail as message, each issue with where it is', async () => {
    const err = (await failure(clientFor('validation').GET('/healthz', {}))) as ClientError;
    expect(err).toMatchObject({ code: 'validation_failed', status: 400 });
    expect(err.message).toBe('query parameter "limit": Invalid input: expected number, received NaN');
    expect(err.problem?.issues).toEqual([
      { code: 'invalid_type', path: ['limit'], message: 'Invalid input', in: 'query' },
    ]);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP-dates; refuses what is neither', () => {
    const now = Date.parse('2026-12-05T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Sat, 05 Dec 2026 00:01:00 GMT', now)).toBe(60);
    expect(parseRetryAfter('Fri, 04 Dec 2026 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
