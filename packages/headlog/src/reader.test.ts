import { describe, expect, it } from 'vitest';
import { hex } from '../test/naive.js';
import { encodeLeaf, type HeadLeaf, idHash, leafFor } from './leaf.js';
import { MemoryTree } from './memory-tree.js';
import { type IndexedLeaf, verifyGroupReport, verifyLoggedLeaves, verifyServedRecord } from './reader.js';

const head = (n: number, fork = 0) => (n * 7 + fork).toString(16).padStart(64, '0');
const RUN = { tenantId: 'acme', runId: 'run-1' };
const leafOf = (length: number, fork = 0, runId = 'run-1', groupId: string | null = 'exp-1'): HeadLeaf =>
  leafFor({ tenantId: 'acme', runId, groupId, length, head: head(length, fork), loggedMs: 1000 + length });
const indexed = (...leaves: HeadLeaf[]): IndexedLeaf[] => leaves.map((leaf, index) => ({ index, leaf }));
const served = (length: number, fork = 0) => ({
  length,
  head: head(length, fork),
  headAt: (l: number) => head(l, fork),
});

function codeOf(f: () => unknown): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

describe('a served record against its logged leaves', () => {
  const logged = indexed(leafOf(1), leafOf(2), leafOf(3));

  it('ok when it has the latest logged length and head, or is longer (not logged yet)', () => {
    expect(codeOf(() => verifyServedRecord(RUN, logged, served(3)))).toBe('ok');
    expect(codeOf(() => verifyServedRecord(RUN, logged, served(5)))).toBe('ok');
    expect(codeOf(() => verifyServedRecord(RUN, [], served(0)))).toBe('ok');
  });

  it('TruncatedRecord when shorter than the latest logged length', () => {
    expect(codeOf(() => verifyServedRecord(RUN, logged, served(2)))).toBe('TruncatedRecord');
    expect(codeOf(() => verifyServedRecord(RUN, logged, { length: 0, head: head(0) }))).toBe(
      'TruncatedRecord',
    );
  });

  it('held to the largest logged length, not the last leaf: a log whose lengths go down hides no cut', () => {
    // The spec's "latest logged length" is the largest in any log that follows it; a log that appends a
    // shorter leaf (3, then 2 again) must not make a record cut to 2 prove.
    const down = indexed(leafOf(1), leafOf(2), leafOf(3), leafOf(2));
    expect(codeOf(() => verifyServedRecord(RUN, down, served(2)))).toBe('TruncatedRecord');
    expect(codeOf(() => verifyServedRecord(RUN, down, served(3)))).toBe('ok');
  });

  it('ForkedRecord: two heads at one length in the log, or a served head the log does not hold', () => {
    expect(
      codeOf(() => verifyServedRecord(RUN, indexed(leafOf(1), leafOf(2), leafOf(2, 1)), served(2))),
    ).toBe('ForkedRecord');
    expect(codeOf(() => verifyServedRecord(RUN, logged, { length: 3, head: head(3, 1) }))).toBe(
      'ForkedRecord',
    );
    // a longer served record that diverges below the logged length: caught through its earlier heads
    expect(codeOf(() => verifyServedRecord(RUN, logged, served(5, 1)))).toBe('ForkedRecord');
    // without earlier heads, only the length it was served at can be compared
    expect(codeOf(() => verifyServedRecord(RUN, logged, { length: 5, head: head(5, 1) }))).toBe('ok');
  });

  it('ForeignLeaf for a leaf of another run or tenant', () => {
    expect(codeOf(() => verifyServedRecord(RUN, indexed(leafOf(1), leafOf(2, 0, 'run-2')), served(2)))).toBe(
      'ForeignLeaf',
    );
    expect(codeOf(() => verifyServedRecord({ tenantId: 'other', runId: 'run-1' }, logged, served(3)))).toBe(
      'ForeignLeaf',
    );
  });
});

describe("a group report against the group's leaves", () => {
  const leaves = indexed(leafOf(1, 0, 'a'), leafOf(2, 0, 'a'), leafOf(1, 0, 'b'), leafOf(1, 0, 'c'));

  it('ok when every logged run is reported; reported runs with no leaf yet are returned', () => {
    expect(verifyGroupReport(leaves, { groupId: 'exp-1', runs: ['c', 'b', 'a'] })).toEqual({ unlogged: [] });
    expect(verifyGroupReport(leaves, { groupId: 'exp-1', runs: ['a', 'b', 'c', 'd'] })).toEqual({
      unlogged: ['d'],
    });
    expect(verifyGroupReport([], { groupId: 'exp-1', runs: [] })).toEqual({ unlogged: [] });
  });

  it('OmittedRun when a logged run is left out, naming its hash', () => {
    let err: { code?: string; detail?: string } = {};
    try {
      verifyGroupReport(leaves, { groupId: 'exp-1', runs: ['a', 'c'] });
    } catch (e) {
      err = e as typeof err;
    }
    expect(err.code).toBe('OmittedRun');
    expect(err.detail).toContain(idHash('b'));
  });

  it('ForeignLeaf for a leaf of another group or of none', () => {
    expect(codeOf(() => verifyGroupReport(leaves, { groupId: 'exp-2', runs: ['a', 'b', 'c'] }))).toBe(
      'ForeignLeaf',
    );
    const ungrouped = [...leaves, { index: 9, leaf: leafOf(1, 0, 'd', null) }];
    expect(codeOf(() => verifyGroupReport(ungrouped, { groupId: 'exp-1', runs: ['a', 'b', 'c', 'd'] }))).toBe(
      'ForeignLeaf',
    );
  });
});

describe('logged leaves are checked against the tree head before they are read', () => {
  const tree = new MemoryTree();
  const bytes = [leafOf(1), leafOf(1, 0, 'x'), leafOf(2), leafOf(3)].map(encodeLeaf);
  for (const b of bytes) tree.appendLeaf(b);
  const sth = { treeSize: 4, root: hex(tree.root()) };
  const proofs = [0, 2, 3].map((index) => ({ leaf: bytes[index]!, index, path: tree.inclusionProof(index) }));

  it('decodes leaves whose inclusion verifies', () => {
    const got = verifyLoggedLeaves(sth, proofs);
    expect(got.map((l) => [l.index, l.leaf.length])).toEqual([
      [0, 1],
      [2, 2],
      [3, 3],
    ]);
    expect(codeOf(() => verifyServedRecord(RUN, got, served(3)))).toBe('ok');
  });

  it('InclusionFailed for a rewritten leaf, MalformedProof for a wrong index', () => {
    const rewritten = encodeLeaf(leafOf(3, 1));
    expect(codeOf(() => verifyLoggedLeaves(sth, [{ ...proofs[2]!, leaf: rewritten }]))).toBe(
      'InclusionFailed',
    );
    expect(codeOf(() => verifyLoggedLeaves(sth, [{ ...proofs[2]!, index: 4 }]))).toBe('MalformedProof');
    expect(codeOf(() => verifyLoggedLeaves({ ...sth, root: 'x' }, proofs))).toBe('MalformedProof');
  });
});
