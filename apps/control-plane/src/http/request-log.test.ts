// The request logger: a pino child carrying the request id, made only when the request logs (most never do);
// a line it writes carries the id the response echoes.
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { buildApp } from '../app.js';
import { createLogger } from '../observability/logger.js';
import type { ControlPlaneServices } from '../services/api.js';

function appWith(level: 'info' | 'debug') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  const log = createLogger({ level, destination });
  const child = vi.spyOn(log, 'child');
  const { app } = buildApp({
    services: {} as ControlPlaneServices,
    health: async () => ({ ok: true, dialect: 'postgres' }),
    keys: async () => {
      throw new Error('boom');
    },
    log,
  });
  return { app, lines, child };
}

describe('request logger', () => {
  it('a request that logs nothing makes no child logger', async () => {
    const { app, lines, child } = appWith('info');
    for (let i = 0; i < 3; i++) expect((await app.request('/healthz')).status).toBe(200);
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
  });

  it("a request's log line carries the request id its response echoes", async () => {
    const { app, lines, child } = appWith('info');
    const r = await app.request('/keys', { headers: { 'x-request-id': 'req-1' } });
    expect(r.status).toBe(500);
    expect(r.headers.get('x-request-id')).toBe('req-1');
    expect(child).toHaveBeenCalledTimes(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ requestId: 'req-1', msg: 'unhandled error', path: '/keys' });
  });

  it('at debug level every request logs its http line with its id', async () => {
    const { app, lines } = appWith('debug');
    const r = await app.request('/healthz');
    const id = r.headers.get('x-request-id');
    expect(id).toBeTruthy();
    expect(lines).toEqual([expect.objectContaining({ requestId: id, msg: 'http', status: 200 })]);
  });
});
