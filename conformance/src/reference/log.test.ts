// The reference log tree against bytes and shapes computed by hand, and its recursive verifier against
// its own proofs (every tree up to 20 leaves), before any vector is generated from it.
import { blake3 } from '@noble/hashes/blake3.js';
import { describe, expect, it } from 'vitest';
import { ascii, concat, fromHex, H, toHex } from './bytes.js';
import { referenceLog } from './log-commands.js';
import {
  consistencyProof,
  LogHasher,
  leafFromIds,
  mth,
  path,
  pathLength,
  proofLength,
  rootFromPath,
  rootsFromProof,
} from './log-tree.js';

const hasher = new LogHasher();
const leaves = Array.from({ length: 20 }, (_, i) =>
  concat(ascii('everdict.headlog/1'), new Uint8Array(144).fill(i)),
);
const hashes = leaves.map((l) => hasher.leaf(l));
const hex = (xs: Uint8Array[]) => xs.map(toHex);

describe('hashing', () => {
  it('H("") is BLAKE3 of nothing; leaves take 0x00, nodes 0x01', () => {
    expect(toHex(hasher.empty())).toBe('af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
    expect(toHex(hashes[3]!)).toBe(toHex(blake3(fromHex(`00${toHex(leaves[3]!)}`))));
    expect(toHex(hasher.node(hashes[0]!, hashes[1]!))).toBe(
      toHex(blake3(fromHex(`01${toHex(hashes[0]!)}${toHex(hashes[1]!)}`))),
    );
  });

  it('lays a leaf out as tag ‖ H(tenant) ‖ H(run) ‖ H(group) | zeros ‖ u64 length ‖ head ‖ u64 logged_ms', () => {
    const head = H(ascii('head'));
    const leaf = leafFromIds({ tenant: 't', run: 'r', length: 258n, head, loggedMs: 1n });
    const id = (s: string) => toHex(H(ascii(s)));
    expect(toHex(leaf)).toBe(
      `${toHex(ascii('everdict.headlog/1'))}${id('t')}${id('r')}${'00'.repeat(32)}0000000000000102${toHex(head)}0000000000000001`,
    );
    expect(leaf.length).toBe(162);
    expect(
      toHex(
        leafFromIds({ tenant: 't', run: 'r', group: 'g', length: 1n, head, loggedMs: 1n }).subarray(82, 114),
      ),
    ).toBe(id('g'));
  });
});

describe("RFC 9162 §2.1.5's seven-leaf example", () => {
  const [a, b, c, d, e, f, j] = hashes as [
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
    Uint8Array,
  ];
  const g = hasher.node(a, b);
  const h = hasher.node(c, d);
  const i = hasher.node(e, f);
  const k = hasher.node(g, h);
  const l = hasher.node(i, j);
  const seven = hashes.slice(0, 7);

  it('root, audit paths and consistency proofs', () => {
    expect(toHex(mth(hasher, seven))).toBe(toHex(hasher.node(k, l)));
    expect(hex(path(hasher, 0, seven))).toEqual(hex([b, h, l]));
    expect(hex(path(hasher, 3, seven))).toEqual(hex([c, g, l]));
    expect(hex(path(hasher, 4, seven))).toEqual(hex([f, j, k]));
    expect(hex(path(hasher, 6, seven))).toEqual(hex([i, k]));
    expect(hex(consistencyProof(hasher, 3, seven))).toEqual(hex([c, d, g, l]));
    expect(hex(consistencyProof(hasher, 4, seven))).toEqual(hex([l]));
    expect(hex(consistencyProof(hasher, 6, seven))).toEqual(hex([i, j, k]));
  });
});

describe('verification by the recursion run backwards', () => {
  it('every path and proof of every tree up to 20 verifies, and its length is the computed one', () => {
    for (let n = 1; n <= 20; n++) {
      const tree = hashes.slice(0, n);
      const root = mth(hasher, tree);
      for (let m = 0; m < n; m++) {
        const p = path(hasher, m, tree);
        expect(p.length).toBe(pathLength(m, n));
        expect(toHex(rootFromPath(hasher, m, n, hashes[m]!, p))).toBe(toHex(root));
      }
      for (let m = 1; m < n; m++) {
        const p = consistencyProof(hasher, m, tree);
        expect(p.length).toBe(proofLength(m, n));
        const got = rootsFromProof(hasher, m, n, true, mth(hasher, hashes.slice(0, m)), p);
        expect([toHex(got.old), toHex(got.new)]).toEqual([
          toHex(mth(hasher, hashes.slice(0, m))),
          toHex(root),
        ]);
      }
    }
  });

  it('a flipped element changes the root it leads to', () => {
    const tree = hashes.slice(0, 13);
    const p = path(hasher, 6, tree);
    for (let k = 0; k < p.length; k++) {
      const bad = p.map((x, at) => (at === k ? Uint8Array.from(x, (v, z) => (z === 0 ? v ^ 1 : v)) : x));
      expect(toHex(rootFromPath(hasher, 6, 13, hashes[6]!, bad))).not.toBe(toHex(mth(hasher, tree)));
    }
  });
});

describe('the commands', () => {
  it('print exactly the contract objects', () => {
    expect(referenceLog('log-root', '{"leaves":[]}')).toEqual({
      exitCode: 0,
      output: { tree_size: '0', root: toHex(hasher.empty()) },
    });
    expect(referenceLog('log-root', 'nope')).toEqual({
      exitCode: 1,
      output: { ok: false, error: 'MalformedProof' },
    });
    expect(referenceLog('log-verify-nothing', '{}')).toEqual({ exitCode: 2 });
  });
});
