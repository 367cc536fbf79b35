import { ed25519 } from '@noble/curves/ed25519.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { describe, expect, it } from 'vitest';
import { hex, NaiveTree, testLeaves } from '../test/naive.js';
import { MemoryTree } from './memory-tree.js';
import { keyPairFromSeed, verifySignature } from './signing.js';
import {
  type Cosignature,
  cosignTreeHead,
  countWitnesses,
  decodeTreeHead,
  encodeTreeHead,
  logIdOf,
  parseTreeHeadJson,
  requireWitnesses,
  type SignedTreeHead,
  signTreeHead,
  treeHeadToJson,
  verifyCosignature,
  verifyTreeHead,
} from './tree-head.js';
import { verifyTreeHeadExtends } from './witness.js';

const log = keyPairFromSeed(new Uint8Array(32).fill(1));
const witnesses = [2, 3, 4].map((b) => keyPairFromSeed(new Uint8Array(32).fill(b)));
const ROOT = 'cd'.repeat(32);
const sth = signTreeHead({ treeSize: 7, root: ROOT, timestampMs: 1_700_000_000_000 }, log);
/** The identity point as a public key, and R = identity, S = 0: ZIP-215 accepts it for any message. */
const IDENTITY_KEY = Uint8Array.from([1, ...new Array(31).fill(0)]);
const IDENTITY_SIG = Uint8Array.from([1, ...new Array(63).fill(0)]);

const flipHex = (h: string) => (h[0] === '0' ? `1${h.slice(1)}` : `0${h.slice(1)}`);

describe('tree head bytes and JSON', () => {
  it('lay out tag ‖ u64 tree_size ‖ root ‖ u64 timestamp_ms ‖ log_id (102 bytes); log_id = H(public key)', () => {
    expect(sth.logId).toBe(hex(blake3(log.publicKey)));
    const want =
      Buffer.from('everdict.headlog.sth/1', 'ascii').toString('hex') +
      '0000000000000007' +
      ROOT +
      (1_700_000_000_000).toString(16).padStart(16, '0') +
      sth.logId;
    expect(hex(encodeTreeHead(sth))).toBe(want);
    const { signature: _, ...head } = sth;
    expect(decodeTreeHead(encodeTreeHead(sth))).toEqual(head);
  });

  it('JSON: u64 fields as decimal strings; parsed exactly', () => {
    const json = treeHeadToJson(sth);
    expect(json).toEqual({
      tree_size: '7',
      root: ROOT,
      timestamp_ms: '1700000000000',
      log_id: sth.logId,
      signature: sth.signature,
    });
    expect(parseTreeHeadJson(JSON.parse(JSON.stringify(json)))).toEqual(sth);
    for (const bad of [
      { ...json, tree_size: 7 },
      { ...json, tree_size: '07' },
      { ...json, root: ROOT.toUpperCase() },
      { ...json, extra: 1 },
      { ...json, signature: sth.signature.slice(2) },
      Object.fromEntries(Object.entries(json).filter(([k]) => k !== 'log_id')),
      'not an object',
    ]) {
      expect(() => parseTreeHeadJson(bad)).toThrow(/MalformedTreeHead/);
    }
  });
});

describe('signatures (strict RFC 8032)', () => {
  it('verify under the log key; any changed field, another key or log_id is BadSignature', () => {
    verifyTreeHead(sth, log.publicKey);
    const bad: SignedTreeHead[] = [
      { ...sth, treeSize: 8 },
      { ...sth, root: flipHex(sth.root) },
      { ...sth, timestampMs: sth.timestampMs + 1 },
      { ...sth, signature: flipHex(sth.signature) },
      { ...sth, signature: sth.signature.slice(2) },
    ];
    for (const s of bad) expect(() => verifyTreeHead(s, log.publicKey)).toThrow(/BadSignature/);
    expect(() => verifyTreeHead(sth, witnesses[0]!.publicKey)).toThrow(/BadSignature/);
    // the other key's log id, a signature that verifies under it: still bound to log_id
    const other = signTreeHead({ treeSize: 7, root: ROOT, timestampMs: 1 }, witnesses[0]!);
    expect(() => verifyTreeHead({ ...other, logId: sth.logId }, witnesses[0]!.publicKey)).toThrow(
      /BadSignature/,
    );
  });

  it('never accepts a small-order key (the identity key with the identity signature)', () => {
    const msg = encodeTreeHead(sth);
    expect(ed25519.verify(IDENTITY_SIG, msg, IDENTITY_KEY)).toBe(true); // what ZIP-215 mode would accept
    expect(verifySignature(IDENTITY_SIG, msg, IDENTITY_KEY)).toBe(false);
    const forged = { ...sth, logId: logIdOf(IDENTITY_KEY), signature: hex(IDENTITY_SIG) };
    expect(() => verifyTreeHead(forged, IDENTITY_KEY)).toThrow(/BadSignature/);
    const cosig: Cosignature = { witness: hex(IDENTITY_KEY), signature: hex(IDENTITY_SIG) };
    expect(verifyCosignature(sth, cosig)).toBe(false);
    expect(countWitnesses(sth, [cosig], [hex(IDENTITY_KEY)])).toBe(0);
  });

  it('rejects a non-canonical S (S + L)', () => {
    const msg = encodeTreeHead(sth);
    const sig = Buffer.from(sth.signature, 'hex');
    const L = (1n << 252n) + 27742317777372353535851937790883648493n;
    let s = 0n;
    for (let i = 31; i >= 0; i--) s = (s << 8n) | BigInt(sig[32 + i]!);
    s += L;
    for (let i = 0; i < 32; i++) sig[32 + i] = Number((s >> BigInt(8 * i)) & 0xffn);
    expect(verifySignature(new Uint8Array(sig), msg, log.publicKey)).toBe(false);
  });
});

describe('witness cosignatures', () => {
  const cosigs = witnesses.map((w) => cosignTreeHead(sth, w));
  const trusted = witnesses.map((w) => hex(w.publicKey));

  it('sign "everdict.headlog.cosign/1" ‖ sth bytes with the witness key', () => {
    const msg = new Uint8Array([
      ...Buffer.from('everdict.headlog.cosign/1', 'ascii'),
      ...encodeTreeHead(sth),
    ]);
    expect(ed25519.verify(Buffer.from(cosigs[0]!.signature, 'hex'), msg, witnesses[0]!.publicKey)).toBe(true);
    expect(verifyCosignature(sth, cosigs[0]!)).toBe(true);
    expect(verifyCosignature({ ...sth, treeSize: 8 }, cosigs[0]!)).toBe(false);
    // a cosignature is not an STH signature and vice versa
    expect(verifyCosignature(sth, { witness: hex(log.publicKey), signature: sth.signature })).toBe(false);
  });

  it('count distinct trusted witnesses with valid cosignatures; require k', () => {
    expect(countWitnesses(sth, cosigs, trusted)).toBe(3);
    expect(countWitnesses(sth, [...cosigs, ...cosigs], trusted)).toBe(3);
    expect(countWitnesses(sth, cosigs, trusted.slice(0, 2))).toBe(2);
    const forged = { ...cosigs[2]!, signature: cosigs[1]!.signature };
    expect(countWitnesses(sth, [cosigs[0]!, forged], trusted)).toBe(1);
    requireWitnesses(sth, cosigs, trusted, 3);
    expect(() => requireWitnesses(sth, cosigs.slice(0, 2), trusted, 3)).toThrow(/InsufficientWitnesses/);
  });
});

describe('what a witness checks before cosigning', () => {
  const leaves = testLeaves(20);
  const naive = new NaiveTree(leaves);
  const tree = new MemoryTree();
  for (const l of leaves) tree.appendLeaf(l);
  const at = (n: number, timestampMs = n) =>
    signTreeHead({ treeSize: n, root: hex(naive.root(n)), timestampMs }, log);

  it('accepts a first STH and a consistent larger one', () => {
    verifyTreeHeadExtends(null, at(5), [], log.publicKey);
    verifyTreeHeadExtends(at(5), at(12), tree.consistencyProof(5, 12), log.publicKey);
    verifyTreeHeadExtends(at(12), at(12, 99), [], log.publicKey);
  });

  it('refuses a smaller tree, a fork, a bad proof and a bad signature', () => {
    expect(() => verifyTreeHeadExtends(at(12), at(5), [], log.publicKey)).toThrow(/InconsistentLog/);
    const fork = signTreeHead(
      { treeSize: 12, root: hex(new NaiveTree(testLeaves(12, 7)).root(12)), timestampMs: 1 },
      log,
    );
    expect(() => verifyTreeHeadExtends(at(12), fork, [], log.publicKey)).toThrow(/InconsistentLog/);
    expect(() => verifyTreeHeadExtends(at(5), fork, tree.consistencyProof(5, 12), log.publicKey)).toThrow(
      /InconsistentLog/,
    );
    expect(() => verifyTreeHeadExtends(at(5), at(12), [], log.publicKey)).toThrow(/MalformedProof/);
    expect(() => verifyTreeHeadExtends(at(5), { ...at(12), treeSize: 13 }, [], log.publicKey)).toThrow(
      /BadSignature/,
    );
  });

  it('refuses a signed empty tree whose root is not H(""), as a first STH too; accepts H("")', () => {
    const bogus = signTreeHead({ treeSize: 0, root: ROOT, timestampMs: 1 }, log);
    expect(() => verifyTreeHeadExtends(null, bogus, [], log.publicKey)).toThrow(/InconsistentLog/);
    expect(() => verifyTreeHeadExtends(bogus, bogus, [], log.publicKey)).toThrow(/InconsistentLog/);
    const empty = signTreeHead({ treeSize: 0, root: hex(blake3(new Uint8Array(0))), timestampMs: 1 }, log);
    verifyTreeHeadExtends(null, empty, [], log.publicKey);
    verifyTreeHeadExtends(empty, at(5), [], log.publicKey);
  });
});
