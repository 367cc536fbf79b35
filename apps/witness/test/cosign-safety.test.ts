// What the witness cosigns, against logs over real HTTP: nothing it could not write to its state file first
// (a failed write leaves its memory as it was, so no later poll cosigns a tree a restart would forget); the
// same tree signed again later (a log re-signing to show it is alive) — but not an older STH over it; and
// never a signed empty tree whose root is not H(""); and never two trees that do not extend one another, even
// when two polls of one log run at once.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bytesToHex,
  consistencyProofObject,
  cosignedTreeHeadToWire,
  emptyRoot,
  generateKeyPair,
  logIdOf,
  logKeyToWire,
  parseTreeHeadJson,
  signTreeHead,
  treeHeadToJson,
  verifyCosignature,
} from '@everdict/headlog';
import { TestLog } from '@everdict/headlog/testing';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { emptyState, loadState, Witness, WitnessError, WitnessMetrics } from '../src/index.js';
import { type Fixture, fixture, head } from './helpers.js';

let f: Fixture | undefined;
let raw: Server | undefined;
afterEach(async () => {
  await f?.server.close();
  f = undefined;
  raw?.closeAllConnections();
  await new Promise<void>((resolve) => (raw ? raw.close(() => resolve()) : resolve()));
  raw = undefined;
});

const quiet = () => pino({ level: 'silent' });

async function refusal(p: Promise<unknown>): Promise<WitnessError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(WitnessError);
  return e as WitnessError;
}

describe('what the witness cosigns', () => {
  it('a state file it cannot write: StateUnwritable, memory unchanged, nothing cosigned on any later poll', async () => {
    f = await fixture(3);
    const dir = join(f.dir, 'state');
    mkdirSync(dir);
    const statePath = join(dir, 'state.json');
    const w = new Witness({
      key: f.witness,
      statePath,
      state: loadState(statePath),
      metrics: new WitnessMetrics(),
      logger: quiet(),
    });
    const target = { url: f.server.url };
    expect(await w.poll(target)).toMatchObject({ kind: 'accepted', treeSize: 3 });

    rmSync(dir, { recursive: true }); // the volume went away: no write can succeed
    for (let i = 4; i <= 5; i++) f.log.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i) });
    f.log.publish();
    for (let attempt = 0; attempt < 2; attempt++) {
      const e = await refusal(w.poll(target));
      expect(e.code).toBe('StateUnwritable');
      expect(w.state.logs[f.server.url]?.accepted?.tree_size).toBe('3');
      expect(f.log.cosignaturesOf(5)).toEqual([]); // not cosigned: a restart would not remember it
    }

    mkdirSync(dir);
    expect(await w.poll(target)).toEqual({ kind: 'accepted', treeSize: 5, cosignatures: 1 });
    expect(loadState(statePath).logs[f.server.url]?.accepted?.tree_size).toBe('5');
    expect(readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('the same tree signed again later is accepted and cosigned; an older STH over it is not', async () => {
    f = await fixture(3);
    const statePath = join(f.dir, 'state.json');
    const w = new Witness({
      key: f.witness,
      statePath,
      state: loadState(statePath),
      metrics: new WitnessMetrics(),
      logger: quiet(),
    });
    const target = { url: f.server.url };
    await w.poll(target);
    const stale = f.log.clone(); // still shows the first STH over the 3 leaves
    const first = f.log.sthAt(3)!;

    const again = f.log.publish(first.timestampMs + 60_000); // same size, same root, later
    expect(again.root).toBe(first.root);
    expect(await w.poll(target)).toEqual({ kind: 'accepted', treeSize: 3, cosignatures: 1 });
    const [c] = f.log.cosignaturesOf(3);
    expect(verifyCosignature(again, c!)).toBe(true);
    expect(parseTreeHeadJson(loadState(statePath).logs[f.server.url]!.accepted)).toEqual(again);

    f.server.serve(stale); // a replay of the earlier STH: the memory does not go back
    expect(await w.poll(target)).toEqual({ kind: 'unchanged', treeSize: 3 });
    expect(parseTreeHeadJson(loadState(statePath).logs[f.server.url]!.accepted)).toEqual(again);
  });

  it('a signed empty tree whose root is not H("") is never cosigned, as a first STH too (a fork)', async () => {
    const log = generateKeyPair();
    const witness = generateKeyPair();
    const bogus = signTreeHead({ treeSize: 0, root: 'cd'.repeat(32), timestampMs: 5 }, log);
    const honest = signTreeHead({ treeSize: 0, root: bytesToHex(emptyRoot()), timestampMs: 5 }, log);
    let shown = bogus;
    const posted: unknown[] = [];
    raw = createServer((req, res) => {
      const send = (json: unknown) => {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (req.url === '/log/key') return send(logKeyToWire(log.publicKey, logIdOf(log.publicKey)));
      if (req.url === '/log/sth') return send(cosignedTreeHeadToWire(shown, []));
      if (req.method === 'POST' && req.url === '/log/cosignatures') {
        posted.push(shown.root);
        return send({ tree_size: '0', cosignatures: 1 });
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'witness-'));
    const w = new Witness({
      key: witness,
      statePath: join(dir, 'state.json'),
      state: emptyState(),
      metrics: new WitnessMetrics(),
      logger: quiet(),
    });
    expect(await w.poll({ url, key: bytesToHex(log.publicKey) })).toMatchObject({
      kind: 'fork',
      code: 'InconsistentLog',
    });
    expect(w.state.logs[url]?.accepted).toBeNull();
    expect(posted).toEqual([]);

    shown = honest;
    expect(await w.poll({ url })).toMatchObject({ kind: 'accepted', treeSize: 0 });
    expect(posted).toEqual([honest.root]);
  });

  it('two polls of one log at once: the second waits for the first, so two forks are never both cosigned', async () => {
    const witness = generateKeyPair();
    const base = new TestLog(generateKeyPair(), [bytesToHex(witness.publicKey)]);
    for (let i = 1; i <= 3; i++) base.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i) });
    const sth3 = base.publish();
    // Two continuations of the accepted tree of 3, each consistent with it, neither extending the other.
    const a = base.forkAt(3);
    for (let i = 4; i <= 5; i++) a.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i, 1) });
    a.publish();
    const b = base.forkAt(3);
    for (let i = 4; i <= 6; i++) b.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i, 2) });
    b.publish();
    const byTo = (to: number) => (to === 5 ? a : b);
    let sthAnswers = 0;
    const posted: string[] = [];
    raw = createServer((req, res) => {
      const send = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      const u = new URL(req.url ?? '/', 'http://log');
      if (u.pathname === '/log/sth') {
        const log = sthAnswers++ === 0 ? a : b; // the first request sees one fork, the next the other
        return send(200, cosignedTreeHeadToWire(log.latest()!, []));
      }
      if (u.pathname === '/log/proof/consistency') {
        const from = Number(u.searchParams.get('from'));
        const to = Number(u.searchParams.get('to'));
        const log = byTo(to);
        return send(
          200,
          consistencyProofObject({
            oldSize: from,
            oldRoot: log.rootAt(from),
            newSize: to,
            newRoot: log.rootAt(to),
            proof: log.consistencyProof(from, to),
          }),
        );
      }
      if (req.method === 'POST' && u.pathname === '/log/cosignatures') {
        let body = '';
        req.on('data', (c: Buffer) => {
          body += c.toString('utf8');
        });
        req.on('end', () => {
          const size = (JSON.parse(body) as { sth: { tree_size: string } }).sth.tree_size;
          posted.push(size);
          send(201, { tree_size: size, cosignatures: 1 });
        });
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'witness-'));
    const logKey = bytesToHex(base.key.publicKey);
    const w = new Witness({
      key: witness,
      statePath: join(dir, 'state.json'),
      state: { ...emptyState(), logs: { [url]: { log_key: logKey, accepted: treeHeadToJson(sth3) } } },
      metrics: new WitnessMetrics(),
      logger: quiet(),
    });
    const target = { url, key: logKey };
    const outcomes = await Promise.all([w.poll(target), w.poll(target)]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['accepted', 'fork']);
    expect(posted).toHaveLength(1); // one of the two continuations, never both
  });
});
