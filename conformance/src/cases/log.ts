// LOG: the head log's command-line contract (spec/witnessed-heads.md). Roots of pinned trees, audit paths
// and consistency proofs that verify, every tampered element that must not, and every "Precise readings"
// clause — including MalformedProof winning over a hash mismatch.
import { base } from './log-builders.js';
import { LOG_CONSISTENCY_CASES } from './log-consistency.js';
import type { LogCase } from './log-define.js';
import { LOG_INCLUSION_CASES } from './log-inclusion.js';
import { LOG_ROOT_CASES } from './log-roots.js';

export const LOG_CASES: readonly LogCase[] = [
  ...LOG_ROOT_CASES,
  ...LOG_INCLUSION_CASES,
  ...LOG_CONSISTENCY_CASES,
  {
    ...base(
      'unknown-subcommand',
      'log-frobnicate',
      'A subcommand the contract does not name: exit 2 (usage).',
    ),
    input: { stdin: '{}' },
    expect: 'usage',
  },
];
