// LOG cases of log-verify-consistency: proofs that verify (the RFC's example among them), every tampered
// element that must not, and each "Precise readings" clause.
import { cons, edit } from './log-builders.js';
import { flipHex, type LogCase, type LogFixture } from './log-define.js';

const C = (f: LogFixture, m: number, n: number) => f.consistency(m, n);

export const LOG_CONSISTENCY_CASES: LogCase[] = [
  cons('consistency-rfc-3-to-7', 'RFC example: PROOF(3, D[7]) = [c, d, g, l].', (f) => C(f, 3, 7)),
  cons(
    'consistency-rfc-4-to-7',
    'RFC example: PROOF(4, D[7]) = [l]: a power-of-two old tree is not repeated.',
    (f) => C(f, 4, 7),
  ),
  cons('consistency-rfc-6-to-7', 'RFC example: PROOF(6, D[7]) = [i, j, k].', (f) => C(f, 6, 7)),
  cons('consistency-1-to-2', 'The smallest growth: [h(leaf 1)].', (f) => C(f, 1, 2)),
  cons('consistency-1-to-69', 'From one leaf (a power of two) to 69.', (f) => C(f, 1, 69)),
  cons('consistency-32-to-64', 'Power of two to power of two: [MTH(D[32:64])].', (f) => C(f, 32, 64)),
  cons('consistency-37-to-69', 'Neither size a power of two.', (f) => C(f, 37, 69)),
  cons('consistency-68-to-69', 'One leaf appended to 68.', (f) => C(f, 68, 69)),
  cons('consistency-equal-sizes', 'old_size = new_size with equal roots and an empty proof.', (f) => ({
    ...C(f, 7, 7),
    proof: [],
  })),
  cons('consistency-from-empty', 'old_size 0: old_root is H("") and the proof is empty.', (f) => C(f, 0, 7)),
  cons('consistency-empty-to-empty', 'Both trees empty.', (f) => C(f, 0, 0)),
  cons(
    'consistency-wrong-new-root',
    'A well-formed proof to another new root: InconsistentLog.',
    (f) => edit(C(f, 3, 7), 'new_root', f.root(6)),
    'InconsistentLog',
  ),
  cons(
    'consistency-wrong-old-root',
    'A well-formed proof from another old root.',
    (f) => edit(C(f, 3, 7), 'old_root', f.root(2)),
    'InconsistentLog',
  ),
  cons(
    'consistency-wrong-old-root-power-of-two',
    'The old root of a power-of-two tree is not in the proof, yet it is checked.',
    (f) => edit(C(f, 4, 7), 'old_root', f.root(3)),
    'InconsistentLog',
  ),
  cons(
    'consistency-tampered-first-element',
    'The first proof element changed.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(
        o,
        'proof',
        (o.proof as string[]).map((p, k) => (k === 0 ? flipHex(p) : p)),
      );
    },
    'InconsistentLog',
  ),
  cons(
    'consistency-tampered-last-element',
    'The last proof element changed.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(
        o,
        'proof',
        (o.proof as string[]).map((p, k, a) => (k === a.length - 1 ? flipHex(p) : p)),
      );
    },
    'InconsistentLog',
  ),
  cons(
    'consistency-swapped-elements',
    'Two proof elements in the wrong order.',
    (f) => {
      const o = C(f, 3, 7);
      const [a, b, ...rest] = o.proof as string[];
      return edit(o, 'proof', [b, a, ...rest]);
    },
    'InconsistentLog',
  ),
  cons(
    'consistency-other-old-size',
    "3→7's proof given as 5→7 (same length).",
    (f) => ({ ...C(f, 3, 7), old_size: 5, old_root: f.root(5) }),
    'InconsistentLog',
  ),
  cons(
    'consistency-equal-sizes-different-roots',
    'old_size = new_size: two roots for one size.',
    (f) => ({ ...C(f, 7, 7), old_root: f.root(6) }),
    'InconsistentLog',
  ),
  cons(
    'consistency-from-empty-wrong-root',
    'old_size 0 with an old_root that is not H("").',
    (f) => ({ ...C(f, 0, 7), old_root: f.root(1) }),
    'InconsistentLog',
  ),
  cons(
    'consistency-power-of-two-old-root-repeated',
    "4→7 with the old root prepended ([k, l]): the RFC's proof does not repeat it, so the length is wrong: MalformedProof.",
    (f) => {
      const o = C(f, 4, 7);
      return edit(o, 'proof', [o.old_root, ...(o.proof as string[])]);
    },
    'MalformedProof',
  ),
  cons(
    'consistency-old-above-new',
    'old_size > new_size.',
    (f) => ({ ...C(f, 7, 7), old_size: 8, old_root: f.root(8) }),
    'MalformedProof',
  ),
  cons(
    'consistency-equal-sizes-nonempty-proof',
    'old_size = new_size needs no proof; one element is MalformedProof.',
    (f) => ({ ...C(f, 7, 7), proof: [f.root(7)] }),
    'MalformedProof',
  ),
  cons(
    'consistency-from-empty-nonempty-proof',
    'old_size 0 needs no proof.',
    (f) => ({ ...C(f, 0, 7), proof: [f.root(7)] }),
    'MalformedProof',
  ),
  cons(
    'consistency-missing-element',
    'The last element dropped.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(o, 'proof', (o.proof as string[]).slice(0, -1));
    },
    'MalformedProof',
  ),
  cons(
    'consistency-extra-element',
    'The new root appended.',
    (f) => {
      const o = C(f, 37, 69);
      return edit(o, 'proof', [...(o.proof as string[]), o.new_root]);
    },
    'MalformedProof',
  ),
  cons(
    'consistency-malformed-wins-over-mismatch',
    'A short proof between wrong roots: MalformedProof, not InconsistentLog.',
    (f) => {
      const o = C(f, 3, 7);
      return { ...o, new_root: f.root(6), proof: (o.proof as string[]).slice(1) };
    },
    'MalformedProof',
  ),
  cons(
    'consistency-size-as-string',
    'Sizes are JSON numbers.',
    (f) => edit(C(f, 3, 7), 'old_size', '3'),
    'MalformedProof',
  ),
  cons(
    'consistency-unknown-field',
    'An unknown field.',
    (f) => ({ ...C(f, 3, 7), tree_size: 7 }),
    'MalformedProof',
  ),
  cons(
    'consistency-missing-proof',
    'No "proof" field.',
    (f) => edit(C(f, 3, 7), 'proof', undefined),
    'MalformedProof',
  ),
  cons('consistency-not-json', 'Input that is not JSON.', { stdin: 'old_size=3' }, 'MalformedProof'),
];
