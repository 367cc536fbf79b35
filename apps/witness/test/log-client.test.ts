// What a log's answer can do to the witness's client, over real HTTP from a raw `node:http` server: a body
// cut off mid-way is `LogUnavailable` (a poll error, not a crash), and a body that never ends is refused
// once it passes `MAX_ANSWER_BYTES` — the witness stops reading instead of holding it all.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LogClient, MAX_ANSWER_BYTES, WitnessError } from '../src/index.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(handler: (res: ServerResponse) => void): Promise<string> {
  server = createServer((_req, res) => handler(res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function refusal(p: Promise<unknown>): Promise<WitnessError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(WitnessError);
  return e as WitnessError;
}

describe('LogClient answers', () => {
  it('a connection cut in the middle of the body is LogUnavailable, not an uncaught error', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"sth": {"tree_size": "', () => res.socket?.destroy());
    });
    const e = await refusal(new LogClient(url).latest());
    expect(e.code).toBe('LogUnavailable');
  });

  it('a body past MAX_ANSWER_BYTES is refused and no longer read (an endless stream)', async () => {
    const TOTAL = 64 * MAX_ANSWER_BYTES;
    const chunk = Buffer.alloc(64 * 1024, 0x20); // JSON whitespace: only the size refuses it
    let written = 0;
    let closed!: () => void;
    const done = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const url = await serve((res) => {
      res.on('close', () => closed());
      res.writeHead(200, { 'content-type': 'application/json' });
      const pump = () => {
        while (written < TOTAL && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed) res.end();
      };
      pump();
    });
    const e = await refusal(new LogClient(url).consistency(1, 2));
    expect(e.code).toBe('LogUnavailable');
    expect(e.detail).toMatch(/larger than/);
    await done;
    // What the server got rid of before the client hung up: the cap plus socket buffers, not the stream.
    expect(written).toBeLessThan(16 * MAX_ANSWER_BYTES);
  });

  it('a declared content-length past the cap is refused before the body is read', async () => {
    const url = await serve((res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(MAX_ANSWER_BYTES + 1),
      });
      res.write('{');
    });
    const e = await refusal(new LogClient(url).key());
    expect(e.detail).toMatch(/larger than/);
  });
});
