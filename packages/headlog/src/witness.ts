// What a witness checks before it cosigns: the new STH is the log's, not smaller than the last one it
// accepted, and consistent with it. An STH of the empty tree whose root is not `H("")` is a tree that
// cannot exist: refused even as a first STH (nothing else could ever be proven consistent with it).
import { equalBytes, parseHash } from './bytes.js';
import { HeadLogError } from './errors.js';
import { EMPTY_ROOT } from './hash.js';
import { type SignedTreeHead, verifyTreeHead } from './tree-head.js';
import { verifyConsistency } from './verify.js';

/**
 * `next` may replace `accepted` (the witness's last accepted STH, or `null` for none): its signature
 * verifies under the log key (`BadSignature`), its tree is not smaller (`InconsistentLog`: a log never
 * shrinks) and `proof` proves it extends the accepted tree (`MalformedProof` / `InconsistentLog`). An STH
 * of size 0 whose root is not `H("")` is `InconsistentLog`, with or without an accepted one.
 */
export function verifyTreeHeadExtends(
  accepted: SignedTreeHead | null,
  next: SignedTreeHead,
  proof: readonly Uint8Array[],
  logPublicKey: Uint8Array,
): void {
  verifyTreeHead(next, logPublicKey);
  if (next.treeSize === 0 && !equalBytes(parseHash(next.root)!, EMPTY_ROOT)) {
    throw new HeadLogError('InconsistentLog', 'a signed tree of size 0 whose root is not H("")');
  }
  if (accepted === null) return;
  if (next.treeSize < accepted.treeSize) {
    throw new HeadLogError(
      'InconsistentLog',
      `a tree of ${next.treeSize} after an accepted tree of ${accepted.treeSize}`,
    );
  }
  verifyConsistency(
    accepted.treeSize,
    next.treeSize,
    parseHash(accepted.root)!,
    parseHash(next.root)!,
    proof,
  );
}
