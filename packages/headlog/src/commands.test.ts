// The command-line contract as a function; the conformance suite drives the same through a CLI.
import { describe, expect, it } from 'vitest';
import { hex, hexes, NaiveTree, testLeaves } from '../test/naive.js';
import { runLogCommand } from './commands.js';
import { MemoryTree } from './memory-tree.js';

const leaves = testLeaves(9);
const naive = new NaiveTree(leaves);
const tree = new MemoryTree();
for (const l of leaves) tree.appendLeaf(l);
const run = (cmd: Parameters<typeof runLogCommand>[0], input: unknown) =>
  runLogCommand(cmd, typeof input === 'string' ? input : JSON.stringify(input));
const fail = (error: string) => ({ exitCode: 1, output: { ok: false, error } });
const OK = { exitCode: 0, output: { ok: true } };

const incl = {
  leaf: hex(leaves[4]!),
  index: 4,
  tree_size: 9,
  root: hex(naive.root(9)),
  path: hexes(tree.inclusionProof(4)),
};
const cons = {
  old_size: 5,
  old_root: hex(naive.root(5)),
  new_size: 9,
  new_root: hex(naive.root(9)),
  proof: hexes(tree.consistencyProof(5)),
};

describe('log-root', () => {
  it('prints tree_size as a decimal string and the root', () => {
    expect(run('log-root', { leaves: hexes(leaves) })).toEqual({
      exitCode: 0,
      output: { tree_size: '9', root: hex(naive.root(9)) },
    });
    expect(run('log-root', { leaves: [] }).output).toEqual({ tree_size: '0', root: hex(naive.root(0)) });
  });

  it('MalformedProof (exit 1) for anything but a list of 162-byte tagged leaves', () => {
    for (const bad of [
      'nope',
      {},
      { leaves: [hex(leaves[0]!)], extra: true },
      { leaves: [hex(leaves[0]!).toUpperCase()] },
      { leaves: [hex(leaves[0]!).slice(2)] },
      { leaves: [`00${hex(leaves[0]!).slice(2)}`] },
      { leaves: ['ab'.repeat(32)] },
      { leaves: hex(leaves[0]!) },
    ]) {
      expect(run('log-root', bad), JSON.stringify(bad)).toEqual(fail('MalformedProof'));
    }
  });
});

describe('log-verify-inclusion', () => {
  it('ok; InclusionFailed for a well-formed path to another root', () => {
    expect(run('log-verify-inclusion', incl)).toEqual(OK);
    expect(run('log-verify-inclusion', { ...incl, root: hex(naive.root(8)) })).toEqual(
      fail('InclusionFailed'),
    );
    expect(run('log-verify-inclusion', { ...incl, leaf: hex(leaves[5]!) })).toEqual(fail('InclusionFailed'));
  });

  it('MalformedProof for the precise readings, before any hash', () => {
    for (const bad of [
      { ...incl, index: 9 },
      { ...incl, index: 0, tree_size: 0, path: [] },
      { ...incl, path: incl.path.slice(1) },
      { ...incl, path: [...incl.path, incl.root] },
      { ...incl, index: '4' },
      { ...incl, index: -1 },
      { ...incl, index: 1.5 },
      { ...incl, root: incl.root.slice(2) },
      { ...incl, root: `0x${incl.root.slice(2)}` },
      { ...incl, leaf: hex(naive.root(9)) },
      { ...incl, extra: 0 },
      Object.fromEntries(Object.entries(incl).filter(([k]) => k !== 'path')),
      '{"leaf":',
    ]) {
      expect(run('log-verify-inclusion', bad), JSON.stringify(bad)).toEqual(fail('MalformedProof'));
    }
    // a wrong root and a wrong length: the length is decided first
    expect(
      run('log-verify-inclusion', { ...incl, root: hex(naive.root(8)), path: incl.path.slice(1) }),
    ).toEqual(fail('MalformedProof'));
  });
});

describe('log-verify-consistency', () => {
  it('ok; InconsistentLog for a well-formed proof to other roots', () => {
    expect(run('log-verify-consistency', cons)).toEqual(OK);
    expect(run('log-verify-consistency', { ...cons, new_root: hex(naive.root(8)) })).toEqual(
      fail('InconsistentLog'),
    );
    expect(run('log-verify-consistency', { ...cons, old_root: hex(naive.root(4)) })).toEqual(
      fail('InconsistentLog'),
    );
  });

  it('equal sizes and the empty old tree', () => {
    const same = { ...cons, old_size: 9, old_root: cons.new_root, proof: [] };
    expect(run('log-verify-consistency', same)).toEqual(OK);
    expect(run('log-verify-consistency', { ...same, old_root: cons.old_root })).toEqual(
      fail('InconsistentLog'),
    );
    expect(run('log-verify-consistency', { ...same, proof: [cons.new_root] })).toEqual(
      fail('MalformedProof'),
    );
    const empty = { ...cons, old_size: 0, old_root: hex(naive.root(0)), proof: [] };
    expect(run('log-verify-consistency', empty)).toEqual(OK);
    expect(run('log-verify-consistency', { ...empty, old_root: cons.old_root })).toEqual(
      fail('InconsistentLog'),
    );
    expect(run('log-verify-consistency', { ...empty, proof: [cons.old_root] })).toEqual(
      fail('MalformedProof'),
    );
  });

  it('MalformedProof: old above new, a power-of-two old root repeated, wrong lengths and types', () => {
    const pow2 = {
      ...cons,
      old_size: 4,
      old_root: hex(naive.root(4)),
      proof: hexes(tree.consistencyProof(4)),
    };
    expect(run('log-verify-consistency', pow2)).toEqual(OK);
    for (const bad of [
      { ...pow2, proof: [pow2.old_root, ...pow2.proof] },
      { ...cons, old_size: 10 },
      { ...cons, proof: cons.proof.slice(1) },
      { ...cons, proof: [...cons.proof, cons.new_root] },
      { ...cons, new_size: '9' },
      { ...cons, proof: [1] },
      { ...cons, extra: 1 },
    ]) {
      expect(run('log-verify-consistency', bad), JSON.stringify(bad)).toEqual(fail('MalformedProof'));
    }
  });
});
