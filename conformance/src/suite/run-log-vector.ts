// Runs one LOG vector: `<impl> <command>` with the vector's standard input; the exit code must match and,
// for exit 0 and 1, stdout must be exactly one JSON line equal to the expected object.
import type { Implementation } from '../contract/implementation.js';
import { fromHex, H, toHex } from '../reference/bytes.js';
import { type LogVectorT, logStdin } from '../vectors/log-schema.js';
import { CaseFailure, firstDifference, short } from './compare.js';

export async function runLogVector(impl: Implementation, v: LogVectorT): Promise<void> {
  for (const p of v.pinned ?? []) {
    if (toHex(H(fromHex(p.preimage_hex))) !== p.hash)
      throw new CaseFailure(`vector corrupt: pinned preimage "${p.layout}" does not hash to ${p.hash}`);
  }
  const inv = await impl.invoke(v.command, logStdin(v), []);
  if (inv.timedOut) throw new CaseFailure(`${v.command} timed out`);
  if (v.expect.exit === 2) {
    if (inv.exitCode !== 2)
      throw new CaseFailure(`expected ${v.command} to exit 2 (usage) got ${inv.exitCode}`);
    return;
  }
  const lines = inv.stdout.trim().split('\n');
  let got: unknown;
  try {
    if (lines.length !== 1) throw new Error('not one line');
    got = JSON.parse(lines[0]!);
  } catch {
    throw new CaseFailure(
      `${v.command} printed no single JSON line (exit ${inv.exitCode}): ${short(inv.stdout)}`,
    );
  }
  const expected = v.expect.output;
  const diff = firstDifference(expected, got);
  if (diff !== undefined) {
    const want = 'error' in expected ? String(expected.error) : short(expected);
    const said = typeof got === 'object' && got !== null && 'error' in got ? String(got.error) : short(got);
    throw new CaseFailure(`expected ${want} got ${said} (${diff})`);
  }
  if (inv.exitCode !== v.expect.exit)
    throw new CaseFailure(`expected ${v.command} to exit ${v.expect.exit} got ${inv.exitCode}`);
}
