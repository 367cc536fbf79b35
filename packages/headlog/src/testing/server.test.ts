// The test log server answers the wire contract (every body parses with its schema, refusals are
// problem+json) and its answers verify with this package's own verifiers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesToHex, parseHash } from '../bytes.js';
import { runLogCommand } from '../commands.js';
import { verifyLoggedLeaves } from '../reader.js';
import { generateKeyPair } from '../signing.js';
import {
  cosignTreeHead,
  parseTreeHeadJson,
  requireWitnesses,
  treeHeadToJson,
  verifyTreeHead,
} from '../tree-head.js';
import {
  consistencyProofWire,
  cosignatureAcceptedWire,
  cosignedTreeHeadFromWire,
  cosignedTreeHeadWire,
  groupProofWire,
  inclusionProofWire,
  loggedLeavesFromWire,
  loggedLeavesWire,
  logKeyWire,
  problemWire,
} from '../wire.js';
import { startTestLogServer, type TestLogServer } from './server.js';
import { TestLog } from './test-log.js';

const witness = generateKeyPair();
const log = new TestLog(generateKeyPair(), [bytesToHex(witness.publicKey)]);
let server: TestLogServer;
const head = (n: number) => n.toString(16).padStart(64, '0');

beforeAll(async () => {
  for (let i = 1; i <= 6; i++)
    log.append({ tenantId: 't', runId: `r${i % 3}`, groupId: 'g', length: i, head: head(i) });
  log.publish();
  log.append({ tenantId: 't', runId: 'r0', length: 7, head: head(7) });
  log.publish();
  server = await startTestLogServer({ log, apiKeys: { k: 't' } });
});
afterAll(() => server.close());

const get = async (path: string, auth?: string) => {
  const res = await fetch(`${server.url}${path}`, {
    headers: auth ? { authorization: `Bearer ${auth}` } : {},
  });
  return { status: res.status, type: res.headers.get('content-type'), json: (await res.json()) as unknown };
};

describe('test log server: the wire contract', () => {
  it('key, STHs and proofs parse with the wire schemas and verify', async () => {
    const key = logKeyWire.parse((await get('/log/key')).json);
    const latest = cosignedTreeHeadFromWire(cosignedTreeHeadWire.parse((await get('/log/sth')).json));
    expect(latest.sth.treeSize).toBe(7);
    verifyTreeHead(latest.sth, parseHash(key.public_key)!);
    const at6 = cosignedTreeHeadWire.parse((await get('/log/sth/6')).json);
    expect(at6.sth.tree_size).toBe('6');
    const incl = (await get('/log/proof/inclusion?index=2&size=6')).json;
    inclusionProofWire.parse(incl);
    expect(runLogCommand('log-verify-inclusion', JSON.stringify(incl)).output).toEqual({ ok: true });
    const cons = (await get('/log/proof/consistency?from=6&to=7')).json;
    consistencyProofWire.parse(cons);
    expect(runLogCommand('log-verify-consistency', JSON.stringify(cons)).output).toEqual({ ok: true });
  });

  it('a cosignature is kept once per witness and served with its STH', async () => {
    const sth = log.sthAt(7)!;
    const body = JSON.stringify({ sth: treeHeadToJson(sth), cosignature: cosignTreeHead(sth, witness) });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${server.url}/log/cosignatures`, { method: 'POST', body });
      expect(res.status).toBe(201);
      expect(cosignatureAcceptedWire.parse(await res.json())).toEqual({ tree_size: '7', cosignatures: 1 });
    }
    const { sth: served, cosignatures } = cosignedTreeHeadFromWire(
      cosignedTreeHeadWire.parse((await get('/log/sth')).json),
    );
    requireWitnesses(served, cosignatures, [bytesToHex(witness.publicKey)], 1);
    const stranger = generateKeyPair();
    const refused = await fetch(`${server.url}/log/cosignatures`, {
      method: 'POST',
      body: JSON.stringify({ sth: treeHeadToJson(sth), cosignature: cosignTreeHead(sth, stranger) }),
    });
    expect(refused.status).toBe(403);
    expect(problemWire.parse(await refused.json()).code).toBe('InvalidKey');
  });

  it('run and group routes: a key is required; leaves verify in the STH they come with', async () => {
    expect((await get('/runs/r1/log')).status).toBe(401);
    const runLog = loggedLeavesWire.parse((await get('/runs/r1/log', 'k')).json);
    const sth = parseTreeHeadJson(runLog.sth.sth);
    expect(verifyLoggedLeaves(sth, loggedLeavesFromWire(runLog.leaves)).map((l) => l.leaf.length)).toEqual([
      1, 4,
    ]);
    const old = loggedLeavesWire.parse((await get('/runs/r0/log?size=6', 'k')).json);
    expect(old.leaves.map((l) => l.index)).toEqual([2, 5]);
    const group = groupProofWire.parse((await get('/groups/g/proof', 'k')).json);
    expect(group.leaves).toHaveLength(6); // r0's seventh leaf has no group
    const bad = await get('/log/proof/inclusion?index=9&size=7');
    expect([bad.status, bad.type]).toEqual([404, 'application/problem+json']);
    expect((await get('/log/proof/consistency?from=01&to=7')).status).toBe(400);
  });
});
