// Runnable: `pnpm --filter @everdict/headlog build && node packages/headlog/examples/quickstart.mjs`
// (a test runs it too). In your code, import from '@everdict/headlog'.
import {
  bytesToHex,
  cosignTreeHead,
  encodeLeaf,
  generateKeyPair,
  HeadLogError,
  leafFor,
  MemoryTree,
  requireWitnesses,
  signTreeHead,
  verifyLoggedLeaves,
  verifyServedRecord,
  verifyTreeHeadExtends,
} from '../dist/index.js';

const head = (n) => n.toString(16).padStart(64, '0'); // a record's head after n segments (stand-in)
const log = generateKeyPair();
const witness = generateKeyPair();
const tree = new MemoryTree();

// The control plane logs a leaf per committed segment of run-1 (three segments) and of run-2.
const logged = [1, 2, 3].map((length) => {
  const leaf = encodeLeaf(
    leafFor({
      tenantId: 'acme',
      runId: 'run-1',
      groupId: 'exp-7',
      length,
      head: head(length),
      loggedMs: 1_000 + length,
    }),
  );
  return { leaf, index: tree.appendLeaf(leaf) };
});
tree.appendLeaf(
  encodeLeaf(leafFor({ tenantId: 'acme', runId: 'run-2', length: 1, head: head(9), loggedMs: 1_004 })),
);
const sth4 = signTreeHead({ treeSize: tree.size, root: bytesToHex(tree.root()), timestampMs: 2_000 }, log);

// A witness accepts the STH (first one: signature only) and cosigns it; a reader wants one cosignature.
verifyTreeHeadExtends(null, sth4, [], log.publicKey);
const cosignatures = [cosignTreeHead(sth4, witness)];
requireWitnesses(sth4, cosignatures, [bytesToHex(witness.publicKey)], 1);

// The reader checks run-1's leaves are in the cosigned tree, then the record it was served.
const leaves = verifyLoggedLeaves(
  sth4,
  logged.map((l) => ({ ...l, path: tree.inclusionProof(l.index) })),
);
verifyServedRecord({ tenantId: 'acme', runId: 'run-1' }, leaves, { length: 3, head: head(3) });
console.log(`run-1: ${leaves.length} leaves in tree ${sth4.treeSize}, served record ok`);
try {
  verifyServedRecord({ tenantId: 'acme', runId: 'run-1' }, leaves, { length: 2, head: head(2) });
} catch (e) {
  if (!(e instanceof HeadLogError)) throw e;
  console.log(`cut short: ${e.code}`);
}

// The log grows; the witness accepts the new STH only with a consistency proof from the old one.
tree.appendLeaf(
  encodeLeaf(
    leafFor({
      tenantId: 'acme',
      runId: 'run-1',
      groupId: 'exp-7',
      length: 4,
      head: head(4),
      loggedMs: 3_000,
    }),
  ),
);
const sth5 = signTreeHead({ treeSize: tree.size, root: bytesToHex(tree.root()), timestampMs: 4_000 }, log);
verifyTreeHeadExtends(sth4, sth5, tree.consistencyProof(4), log.publicKey);
console.log(
  `tree ${sth4.treeSize} -> ${sth5.treeSize}: consistent, ${tree.consistencyProof(4).length} proof hashes`,
);
