// `record verify --trust-key` is checked before any call: a bad key is a usage error (exit 2) whether the
// control plane answers or not, and nothing is asked of it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everdict } from './capture.js';

let hits = 0;
const server = createServer((_req, res) => {
  hits++;
  res.writeHead(503, { 'content-type': 'application/json' }).end('{"code":"unavailable"}');
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('record verify --trust-key', () => {
  it('a key that is not 64 hex digits is exit 2 before any call (the control plane failing: still 2)', async () => {
    const r = await everdict(['record', 'verify', 'run_x', '--trust-key', 'not-a-key'], {
      EVERDICT_URL: url,
      EVERDICT_API_KEY: 'evd_test',
    });
    expect(r.code).toBe(2);
    expect(r.err).toContain('usage: --trust-key not-a-key: 64 hex digits');
    expect(hits).toBe(0);
  });

  it('with nothing listening it is still exit 2, not 4', async () => {
    const r = await everdict(['record', 'verify', 'run_x', '--trust-key', 'AB'.repeat(32)], {
      EVERDICT_URL: 'http://127.0.0.1:9',
      EVERDICT_API_KEY: 'evd_test',
    });
    expect(r.code).toBe(2);
  });
});
