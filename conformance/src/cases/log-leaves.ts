// The leaves every LOG vector draws from: five runs of tenant-a logging their segments in turn, every third
// leaf in group-a, heads H("head-<i>"), logged_ms 1.7e12 + i. Real leaves in the spec's layout, so an
// implementation that checks a leaf's tag and size sees what a log holds.
import { ascii, H } from '../reference/bytes.js';
import { leafFromIds } from '../reference/log-tree.js';

export const LOG_LEAF_COUNT = 70;

export const LOG_LEAVES: readonly Uint8Array[] = Array.from({ length: LOG_LEAF_COUNT }, (_, i) =>
  leafFromIds({
    tenant: 'tenant-a',
    run: `run-${i % 5}`,
    ...(i % 3 === 0 ? { group: 'group-a' } : {}),
    length: BigInt(1 + Math.floor(i / 5)),
    head: H(ascii(`head-${i}`)),
    loggedMs: 1_700_000_000_000n + BigInt(i),
  }),
);
