// The suite against the in-process reference encoder (every case must pass) and against deliberately
// broken variants of it (the cases that guard each defect must fail).
import { describe, expect, it } from 'vitest';
import type { Implementation, Invocation } from '../contract/implementation.js';
import { defaultVectorsDir } from '../package-root.js';
import { referenceImplementation as reference } from '../reference/implementation.js';
import { loadVectors } from '../vectors/files.js';
import { summaryLines } from './report.js';
import { runSuite } from './run-suite.js';

const vectors = loadVectors(defaultVectorsDir());

type Rewrite = (sub: string, input: string, out: Invocation, parsed: Record<string, unknown>) => Invocation;

function broken(
  rewrite: Rewrite,
  rewriteInput: (sub: string, input: string) => string = (_s, i) => i,
): Implementation {
  return {
    label: 'broken',
    async invoke(sub, stdin, args) {
      const input = rewriteInput(sub, stdin);
      const out = await reference.invoke(sub, input, args);
      if (out.stdout === '') return out; // a usage error (exit 2) prints nothing to rewrite
      return rewrite(sub, input, out, JSON.parse(out.stdout));
    },
  };
}

const print = (exitCode: number, value: unknown): Invocation => ({
  exitCode,
  stdout: JSON.stringify(value),
  stderr: '',
  timedOut: false,
});

async function failing(impl: Implementation): Promise<string[]> {
  const results = await runSuite(impl, vectors);
  return results.filter((r) => !r.passed).map((r) => r.vector.name);
}

describe('the suite', () => {
  it('passes every case against the reference encoder', async () => {
    const results = await runSuite(reference, vectors);
    expect(results.filter((r) => !r.passed).map((r) => `${r.vector.name}: ${r.detail}`)).toEqual([]);
    expect(summaryLines(results).at(-1)).toBe(`${vectors.length} passed, 0 failed`);
  });

  it('fails an implementation whose build prints a wrong head', async () => {
    const flip = broken((sub, _i, out, p) =>
      sub === 'build' && out.exitCode === 0 ? print(0, { ...p, head: '00'.repeat(32) }) : out,
    );
    const failed = await failing(flip);
    expect(failed).toContain('chain-advance-execute-suspend-resume-execute');
    expect(failed).toContain('tamper-suspended-snapshot-root');
  });

  it('fails an implementation that accepts zero idle energy on verify', async () => {
    const lenient = broken((sub, _i, out, p) =>
      sub === 'verify' && p.error === 'ZeroIdleEnergy'
        ? print(0, {
            ok: true,
            head: '00'.repeat(32),
            length: 0,
            idle_uj: '0',
            account: 'no_verdict',
            phase: 'active',
          })
        : out,
    );
    expect((await failing(lenient)).sort()).toEqual(['forged-zero-idle', 'forged-zero-idle-transcript']);
  });

  it('fails an implementation that sums idle energy in JS numbers', async () => {
    const lossy = broken((sub, _i, out, p) =>
      sub === 'verify' && p.ok === true ? print(0, { ...p, idle_uj: String(Number(p.idle_uj)) }) : out,
    );
    const failed = await failing(lossy);
    expect(failed).toEqual(expect.arrayContaining(['idle-single-above-2-53', 'idle-sum-crosses-2-53']));
  });

  it('fails an implementation that reads a transcript beside a memory image as a transcript park', async () => {
    const dropMemory = (_sub: string, input: string) =>
      input.replace(/"transcript":("[0-9a-f]{64}"),"memory":"[0-9a-f]{64}"/g, '"transcript":$1');
    const failed = await failing(broken((_s, _i, out) => out, dropMemory));
    expect(failed).toEqual(
      expect.arrayContaining([
        'refuse-malformed-transcript-with-memory-on-suspend',
        'tamper-transcript-given-memory',
      ]),
    );
  });

  it('fails an implementation that blames a segment where none is to blame', async () => {
    const blames = broken((sub, _i, out, p) =>
      sub === 'verify' && p.ok === false && p.index === undefined ? print(1, { ...p, index: 0 }) : out,
    );
    expect(await failing(blames)).toEqual(
      expect.arrayContaining(['tamper-drop-last-segment', 'tamper-final-head', 'verify-wrong-expect-head']),
    );
  });
});
