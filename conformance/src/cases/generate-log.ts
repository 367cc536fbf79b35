// Turns LOG cases into vectors: the input is built from the reference tree, the reference answers it, and
// the hand-stated expectation (exit code, error, tree size, hand-written preimages) must agree with that
// answer before a vector is written.
import { fromHex, H, toHex } from '../reference/bytes.js';
import { referenceLog } from '../reference/log-commands.js';
import { LogVector, type LogVectorT } from '../vectors/log-schema.js';
import { type LogCase, LogFixture } from './log-define.js';

class LogCaseError extends Error {
  constructor(c: LogCase, message: string) {
    super(`case ${c.name}: ${message}`);
  }
}

const fixture = new LogFixture();

export function logVectorOf(c: LogCase): LogVectorT {
  const source: { input: unknown } | { stdin: string } =
    typeof c.input === 'function' ? { input: c.input(fixture) } : { stdin: c.input.stdin };
  const stdin = 'stdin' in source ? source.stdin : (JSON.stringify(source.input) ?? '');
  const answer = referenceLog(c.command, stdin);
  const out = (answer.output ?? {}) as Record<string, unknown>;
  const wantExit = c.expect === 'usage' ? 2 : c.expect === 'ok' ? 0 : 1;
  if (answer.exitCode !== wantExit)
    throw new LogCaseError(
      c,
      `expected exit ${wantExit}, reference exits ${answer.exitCode} (${JSON.stringify(out)})`,
    );
  if (c.expect !== 'ok' && c.expect !== 'usage' && out.error !== c.expect)
    throw new LogCaseError(c, `expected ${c.expect}, reference says ${String(out.error)}`);
  if (c.treeSize !== undefined && out.tree_size !== String(c.treeSize))
    throw new LogCaseError(c, `expected tree_size ${c.treeSize}, reference says ${String(out.tree_size)}`);
  const pinned = (c.pinned?.(fixture) ?? []).map((p) => ({ ...p, hash: toHex(H(fromHex(p.preimage_hex))) }));
  if (pinned.length > 0 && pinned.at(-1)!.hash !== out.root)
    throw new LogCaseError(c, 'the last hand-written preimage does not hash to the root');
  return LogVector.parse({
    name: c.name,
    class: c.class,
    description: c.description,
    kind: 'log',
    command: c.command,
    ...source,
    expect: wantExit === 2 ? { exit: 2 } : { exit: wantExit, output: out },
    ...(pinned.length > 0 ? { pinned } : {}),
  });
}
