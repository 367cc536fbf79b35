// The witness against a log served over real HTTP by @everdict/headlog/testing (the wire contract of the
// control plane's `/log` routes, issue 18 §2): accepts and cosigns trees that extend what it accepted, and
// alarms — fork counter, error line — on a log that rewrote a leaf, forked its tree, or shrank.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  bytesToHex,
  generateKeyPair,
  parseTreeHeadJson,
  treeHeadToJson,
  verifyCosignature,
} from '@everdict/headlog';
import { TestLog } from '@everdict/headlog/testing';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  loadState,
  saveState,
  startMetricsServer,
  Witness,
  WitnessError,
  WitnessMetrics,
} from '../src/index.js';
import { type Fixture, fixture, head } from './helpers.js';

let f: Fixture;
afterEach(async () => {
  await f?.server.close();
});

function lines() {
  const out: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => out.push(JSON.parse(s)) });
  return { out, logger };
}

function witnessFor(fx: Fixture, metrics = new WitnessMetrics()) {
  const { out, logger } = lines();
  const statePath = join(fx.dir, 'state.json');
  const w = new Witness({ key: fx.witness, statePath, state: loadState(statePath), metrics, logger });
  return { w, out, metrics, statePath };
}

describe('witness', () => {
  it('accepts the first tree, cosigns it, and accepts an extension only with a consistency proof', async () => {
    f = await fixture(3);
    const { w, statePath } = witnessFor(f);
    const target = { url: f.server.url };
    expect(await w.poll(target)).toEqual({ kind: 'accepted', treeSize: 3, cosignatures: 1 });
    const sth3 = f.log.sthAt(3)!;
    const [c] = f.log.cosignaturesOf(3);
    expect(c?.witness).toBe(bytesToHex(f.witness.publicKey));
    expect(verifyCosignature(sth3, c!)).toBe(true);

    expect(await w.poll(target)).toEqual({ kind: 'unchanged', treeSize: 3 });
    for (let i = 4; i <= 9; i++) f.log.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i) });
    f.log.publish();
    const before = f.server.hits.proofs ?? 0;
    expect(await w.poll(target)).toEqual({ kind: 'accepted', treeSize: 9, cosignatures: 1 });
    expect(f.server.hits.proofs).toBe(before + 1); // the consistency proof 3 → 9 was asked for
    const saved = loadState(statePath).logs[f.server.url]!;
    expect(saved.log_key).toBe(bytesToHex(f.log.key.publicKey));
    expect(parseTreeHeadJson(saved.accepted)).toEqual(f.log.sthAt(9));
    expect(readdirSync(f.dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('re-posts its cosignature when the log does not hold it', async () => {
    f = await fixture(2);
    const { w } = witnessFor(f);
    await w.poll({ url: f.server.url });
    const forgetful = f.log.clone();
    // A log that lost its cosignatures (restored from a backup) still shows the same tree.
    const bare = new TestLog(f.log.key, f.log.witnessKeys);
    bare.append({ tenantId: 'acme', runId: 'run-1', length: 1, head: head(1) });
    bare.append({ tenantId: 'acme', runId: 'run-1', length: 2, head: head(2) });
    // same leaves, but its own STH timestamp: another STH over the same root is fine (same size, same root)
    bare.publish(forgetful.sthAt(2)!.timestampMs);
    f.server.serve(bare);
    expect(await w.poll({ url: f.server.url })).toEqual({ kind: 'unchanged', treeSize: 2 });
    expect(bare.cosignaturesOf(2)).toHaveLength(1);
  });

  it('a log that rewrote a logged leaf is a fork: error line, everdict_witness_fork_total on /metrics', async () => {
    f = await fixture(4);
    const { w, out, metrics, statePath } = witnessFor(f);
    await w.poll({ url: f.server.url });
    const stateBefore = readFileSync(statePath, 'utf8');
    f.log.rewrite(1, { tenantId: 'acme', runId: 'run-1', length: 2, head: head(2, 7), loggedMs: 5 });
    f.log.append({ tenantId: 'acme', runId: 'run-1', length: 5, head: head(5) });
    f.log.publish();
    const outcome = await w.poll({ url: f.server.url });
    expect(outcome).toMatchObject({ kind: 'fork', code: 'InconsistentLog', acceptedSize: 4, offeredSize: 5 });
    const alarm = out.find((l) => l.level === 50);
    expect(alarm).toMatchObject({ alarm: 'fork', log: f.server.url, code: 'InconsistentLog' });
    expect(readFileSync(statePath, 'utf8')).toBe(stateBefore); // the fork was not accepted
    expect(f.log.cosignaturesOf(5)).toEqual([]);
    const server = await startMetricsServer(metrics, 0, '127.0.0.1');
    try {
      const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
      expect(text).toContain(`everdict_witness_fork_total{log="${f.server.url}"} 1`);
    } finally {
      await server.close();
    }
  });

  it('the same size with another root is a fork (a rewrite that kept the size)', async () => {
    f = await fixture(4);
    const { w } = witnessFor(f);
    await w.poll({ url: f.server.url });
    f.log.rewrite(3, { tenantId: 'acme', runId: 'run-1', length: 4, head: head(4, 1), loggedMs: 9 });
    expect(await w.poll({ url: f.server.url })).toMatchObject({
      kind: 'fork',
      acceptedSize: 4,
      offeredSize: 4,
    });
  });

  it('a second continuation of a run (the tree forked after the accepted size) is a fork', async () => {
    f = await fixture(3);
    const { w } = witnessFor(f);
    await w.poll({ url: f.server.url });
    f.log.append({ tenantId: 'acme', runId: 'run-1', length: 4, head: head(4) });
    f.log.publish();
    expect(await w.poll({ url: f.server.url })).toMatchObject({ kind: 'accepted', treeSize: 4 });
    // The control plane shows another continuation of run-1 from length 3 to a second audience.
    const other = f.log.forkAt(3);
    other.append({ tenantId: 'acme', runId: 'run-1', length: 4, head: head(4, 9) });
    other.append({ tenantId: 'acme', runId: 'run-1', length: 5, head: head(5, 9) });
    other.publish();
    f.server.serve(other);
    expect(await w.poll({ url: f.server.url })).toMatchObject({
      kind: 'fork',
      code: 'InconsistentLog',
      acceptedSize: 4,
      offeredSize: 5,
    });
  });

  it('a smaller tree after a larger one is a fork', async () => {
    f = await fixture(5);
    const { w } = witnessFor(f);
    await w.poll({ url: f.server.url });
    const older = f.log.forkAt(3);
    older.publish();
    f.server.serve(older);
    expect(await w.poll({ url: f.server.url })).toMatchObject({
      kind: 'fork',
      acceptedSize: 5,
      offeredSize: 3,
    });
  });

  it('an STH not signed by the pinned key is rejected, not accepted and not a fork', async () => {
    f = await fixture(2);
    const { w, metrics } = witnessFor(f);
    await w.poll({ url: f.server.url });
    const impostor = new TestLog(generateKeyPair(), f.log.witnessKeys);
    for (let i = 1; i <= 6; i++)
      impostor.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i) });
    impostor.publish();
    f.server.serve(impostor);
    expect(await w.poll({ url: f.server.url })).toMatchObject({ kind: 'rejected', code: 'BadSignature' });
    expect((await metrics.forks.get()).values).toEqual([]);
    expect(impostor.cosignaturesOf(6)).toEqual([]);
  });

  it('a configured log key is checked from the first STH on', async () => {
    f = await fixture(2);
    const { w } = witnessFor(f);
    const wrong = bytesToHex(generateKeyPair().publicKey);
    expect(await w.poll({ url: f.server.url, key: wrong })).toMatchObject({
      kind: 'rejected',
      code: 'BadSignature',
    });
  });

  it('a configured key other than the pinned one is a fork (KeyChanged): a witness never follows a new key', async () => {
    f = await fixture(2);
    const { w } = witnessFor(f);
    expect(await w.poll({ url: f.server.url })).toMatchObject({ kind: 'accepted', treeSize: 2 });
    const other = bytesToHex(generateKeyPair().publicKey);
    expect(await w.poll({ url: f.server.url, key: other })).toMatchObject({
      kind: 'fork',
      code: 'KeyChanged',
    });
  });

  it('a state file that does not parse is refused, never replaced', async () => {
    f = await fixture(1);
    const path = join(f.dir, 'state.json');
    writeFileSync(path, '{"format":"everdict.witness.state/1","logs":{"x":{"log_key":"zz"}}}');
    expect(() => loadState(path)).toThrow(WitnessError);
    expect(() => loadState(path)).toThrow(/CorruptState/);
    saveState(join(f.dir, 'fresh.json'), { format: 'everdict.witness.state/1', logs: {} });
    expect(existsSync(join(f.dir, 'fresh.json'))).toBe(true);
  });
});

describe('one log, however its URL is spelled', () => {
  it('a log respelled in the config (case, trailing slash) is not pinned again: a fork it shows is found', async () => {
    f = await fixture(4);
    const first = witnessFor(f);
    expect(await first.w.poll({ url: f.server.url })).toMatchObject({ kind: 'accepted', treeSize: 4 });
    const stateBefore = readFileSync(first.statePath, 'utf8');
    f.log.rewrite(1, { tenantId: 'acme', runId: 'run-1', length: 2, head: head(2, 7), loggedMs: 5 });
    f.log.append({ tenantId: 'acme', runId: 'run-1', length: 5, head: head(5) });
    f.log.publish();
    // Restarted with the same log spelled another way.
    const { w, statePath } = witnessFor(f);
    const respelled = `${f.server.url.replace('http://', 'HTTP://')}/`;
    expect(await w.poll({ url: respelled })).toMatchObject({
      kind: 'fork',
      code: 'InconsistentLog',
      acceptedSize: 4,
      offeredSize: 5,
    });
    expect(readFileSync(statePath, 'utf8')).toBe(stateBefore);
    expect(Object.keys(loadState(statePath).logs)).toEqual([f.server.url]);
    expect(f.log.cosignaturesOf(5)).toEqual([]);
  });

  it('a state file holding one log under two spellings is folded when they agree, refused when not', async () => {
    f = await fixture(3);
    const { w, statePath } = witnessFor(f);
    await w.poll({ url: f.server.url });
    const saved = loadState(statePath).logs[f.server.url]!;
    const path = join(f.dir, 'two.json');
    const write = (logs: Record<string, unknown>) => {
      writeFileSync(path, JSON.stringify({ format: 'everdict.witness.state/1', logs }));
      return readFileSync(path, 'utf8');
    };
    // The same key; a tree under one spelling and only the pin under the other, or the same tree twice.
    write({ [f.server.url]: saved, [`${f.server.url}/`]: { log_key: saved.log_key, accepted: null } });
    expect(loadState(path).logs).toEqual({ [f.server.url]: saved });
    write({
      [`${f.server.url}/`]: { log_key: saved.log_key, accepted: null },
      [f.server.url.toUpperCase()]: saved,
    });
    expect(loadState(path).logs).toEqual({ [f.server.url]: saved });
    write({ [`${f.server.url}//`]: saved, [f.server.url]: saved });
    expect(loadState(path).logs).toEqual({ [f.server.url]: saved });

    // Two pinned keys: refused, the file as it was.
    const otherKey = bytesToHex(generateKeyPair().publicKey);
    let before = write({
      [f.server.url]: saved,
      [`${f.server.url}/`]: { log_key: otherKey, accepted: null },
    });
    expect(() => loadState(path)).toThrow(WitnessError);
    expect(() => loadState(path)).toThrow(/CorruptState: .* pinned to two keys/);
    expect(readFileSync(path, 'utf8')).toBe(before);

    // Two accepted trees (a larger one under the other spelling): not provable offline, refused.
    f.log.append({ tenantId: 'acme', runId: 'run-1', length: 4, head: head(4) });
    f.log.publish();
    const larger = treeHeadToJson(f.log.sthAt(4)!);
    const twoTrees = {
      [f.server.url]: saved,
      [`${f.server.url}/`]: { log_key: saved.log_key, accepted: larger },
    };
    before = write(twoTrees);
    expect(() => loadState(path)).toThrow(/CorruptState: .* two accepted trees/);
    expect(readFileSync(path, 'utf8')).toBe(before);
    // A witness handed such a state (not through loadState) refuses it too.
    const { logger } = lines();
    expect(
      () =>
        new Witness({
          key: f.witness,
          statePath: path,
          state: { format: 'everdict.witness.state/1', logs: twoTrees },
          metrics: new WitnessMetrics(),
          logger,
        }),
    ).toThrow(/two accepted trees/);
  });
});
