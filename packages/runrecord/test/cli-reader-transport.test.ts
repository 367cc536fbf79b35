// `verify --log` against a log that misbehaves on the wire, not in its proofs: the built CLI as a child
// process, through a real node:http server standing in front of @everdict/headlog/testing's log server. A
// body cut mid-read and a body past MAX_LOG_ANSWER_BYTES (declared, or streamed without a length) are
// `LogUnavailable` — one JSON line, exit 1 — never a crash, and the CLI stops reading past the cap.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { bytesToHex, cosignTreeHead, generateKeyPair, type KeyPair } from '@everdict/headlog';
import { startTestLogServer, TestLog, type TestLogServer } from '@everdict/headlog/testing';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_LOG_ANSWER_BYTES } from '../src/log-commands.js';
import { encodeWire } from '../src/wire.js';
import { requireBuiltCli, runCli as run } from './cli-process.js';
import { closed, exec, forge } from './helpers.js';

beforeAll(requireBuiltCli);

const record = forge([exec(1), exec(2), exec(3), closed()]);
const wire = JSON.stringify(encodeWire(record));
const MiB = 1 << 20;

/** How the front server answers `GET /runs/run-1/log`, given the log's honest answer. */
type Answer = (honest: Buffer, res: ServerResponse) => void;
/** What the front server did with its answer: bytes handed to the response, and whether it all went. */
interface Served {
  bytes: number;
  finished: boolean;
}

let witness: KeyPair;
let upstream: TestLogServer;
let front: Server;
let frontUrl: string;
let answer: Answer | undefined;
let served: Promise<Served>;

/** Streams `honest` and then spaces up to `total` bytes (still the same JSON), counting what it handed on. */
function padded(honest: Buffer, total: number, res: ServerResponse, headers: Record<string, string>) {
  const space = Buffer.alloc(MiB, 0x20);
  const stats: Served = { bytes: 0, finished: false };
  served = new Promise((resolve) =>
    res.on('close', () => {
      stats.finished = res.writableFinished;
      resolve(stats);
    }),
  );
  async function* body() {
    stats.bytes += honest.length;
    yield honest;
    while (stats.bytes < total) {
      const chunk = space.subarray(0, Math.min(MiB, total - stats.bytes));
      stats.bytes += chunk.length;
      yield chunk;
    }
  }
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  pipeline(Readable.from(body()), res).catch(() => undefined);
}

beforeEach(async () => {
  witness = generateKeyPair();
  const log = new TestLog(generateKeyPair(), [bytesToHex(witness.publicKey)]);
  for (const [i, s] of record.segments.entries())
    log.append({ tenantId: 'acme', runId: 'run-1', length: i + 1, head: s.head });
  const sth = log.publish();
  log.addCosignature(sth, cosignTreeHead(sth, witness));
  upstream = await startTestLogServer({ log, apiKeys: { 'key-acme': 'acme' } });
  answer = undefined;
  front = createServer((req, res) => {
    const authorization = req.headers.authorization;
    fetch(`${upstream.url}${req.url}`, authorization === undefined ? {} : { headers: { authorization } })
      .then(async (up) => {
        const honest = Buffer.from(await up.arrayBuffer());
        if (answer && req.url === '/runs/run-1/log') return answer(honest, res);
        res.writeHead(up.status, { 'content-type': 'application/json' }).end(honest);
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});

afterEach(async () => {
  front.closeAllConnections();
  await new Promise((resolve) => front.close(resolve));
  await upstream.close();
});

const args = () => [
  'verify',
  ...['--log', frontUrl, '--run', 'run-1', '--tenant', 'acme', '--key', 'key-acme'],
  ...['--witness-key', bytesToHex(witness.publicKey)],
];
const unavailable = `${JSON.stringify({ ok: false, error: 'LogUnavailable' })}\n`;

describe('verify --log: the log answers, but not as HTTP should', () => {
  it('through the front server unchanged, and with an answer of several MB (under the cap), it verifies', async () => {
    expect((await run(args(), wire)).code).toBe(0);
    answer = (honest, res) => padded(honest, 8 * MiB, res, { 'content-length': String(8 * MiB) });
    const r = await run(args(), wire);
    expect(r.code, r.err).toBe(0);
    expect(await served).toEqual({ bytes: 8 * MiB, finished: true });
  });

  it('a connection cut mid-body is LogUnavailable (exit 1, one line), not a crash', async () => {
    answer = (honest, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(honest.length) });
      res.write(honest.subarray(0, honest.length >> 1), () => res.socket?.destroy());
    };
    const r = await run(args(), wire);
    expect([r.code, r.out], r.err).toEqual([1, unavailable]);
    expect(r.err).toMatch(/^does not verify: \/runs\/run-1\/log: /);
  });

  it('a declared content-length past the cap is LogUnavailable, refused without reading the body', async () => {
    const total = MAX_LOG_ANSWER_BYTES + 1;
    answer = (honest, res) => padded(honest, total, res, { 'content-length': String(total) });
    const r = await run(args(), wire);
    expect([r.code, r.out], r.err).toEqual([1, unavailable]);
    expect(r.err).toMatch(/larger than 67108864 bytes/);
    const s = await served;
    // The client hung up after the headers: what was handed on is what socket buffers took, not the body.
    expect(s.finished).toBe(false);
    expect(s.bytes).toBeLessThan(MAX_LOG_ANSWER_BYTES / 2);
  });

  it('a streamed body (no content-length) past the cap is LogUnavailable: the CLI stops reading it', async () => {
    const total = 3 * MAX_LOG_ANSWER_BYTES;
    answer = (honest, res) => padded(honest, total, res, {});
    const r = await run(args(), wire);
    expect([r.code, r.out], r.err).toEqual([1, unavailable]);
    expect(r.err).toMatch(/larger than 67108864 bytes/);
    const s = await served;
    expect(s.finished).toBe(false);
    expect(s.bytes).toBeGreaterThan(MAX_LOG_ANSWER_BYTES);
    expect(s.bytes).toBeLessThan(2 * MAX_LOG_ANSWER_BYTES);
  });
});
