// The built command line (dist/cli.js, built by test/global-setup.ts) end to end: against our
// implementation it must pass; against a deliberately broken one it must report failures and exit 1.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultImplCli, packageRoot } from './package-root.js';

const root = packageRoot();
const cli = join(root, 'dist', 'cli.js');
const reference = `"${process.execPath}" "${join(root, 'dist', 'reference-cli.js')}"`;
const brokenFixture = join(root, 'test', 'fixtures', 'broken-impl.mjs');
const ours = defaultImplCli();

function conformance(...args: string[]): { status: number | null; lines: string[] } {
  const run = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', cwd: '/' });
  return { status: run.status, lines: `${run.stdout}${run.stderr}`.trim().split('\n') };
}

function broken(mode: string): string {
  const target = existsSync(ours) ? ours : join(root, 'dist', 'reference-cli.js');
  return `"${process.execPath}" "${brokenFixture}" ${mode} "${target}"`;
}

const SOME = [
  'chain-advance-execute-suspend-resume-execute',
  'park-image-with-memory-pinned',
  'tamper-suspended-snapshot-root',
  'refuse-zero-idle-image-park',
];

describe('everdict-conformance', () => {
  // ≈ 370 process invocations (LOG adds 81): a minute on a quiet 2-core machine, several when it is shared (load 20+
  // measured), hence the generous limits — per invocation too.
  it('passes against our implementation (the default --impl)', { timeout: 900_000 }, () => {
    expect(existsSync(ours), `${ours} is missing: build @everdict/runrecord first`).toBe(true);
    const { status, lines } = conformance('--timeout', '120000');
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([]);
    expect(lines.at(-1)).toMatch(/^\d+ passed, 0 failed$/);
    expect(status).toBe(0);
  });

  it('passes against the reference encoder run as a command', () => {
    const { status, lines } = conformance('--impl', reference, '--only', SOME.join(','));
    expect(lines.at(-1)).toBe('4 passed, 0 failed');
    expect(lines).toContain('PASS  C14      park-image-with-memory-pinned');
    expect(lines.some((l) => /^class C6 +2\/2 passed$/.test(l))).toBe(true);
    expect(status).toBe(0);
  });

  it('fails against an implementation that prints a wrong head, and exits non-zero', {
    timeout: 60_000,
  }, () => {
    const { status, lines } = conformance('--impl', broken('flip-head'), '--only', SOME.join(','));
    expect(lines.filter((l) => l.startsWith('FAIL')).length).toBe(3); // the zero-idle refusal prints no record
    const head = 'e33c1fd831fa27202915d34593d361aa5980b93bda269afebb2d68288e6216d';
    expect(lines).toContain(
      `FAIL  C6       chain-advance-execute-suspend-resume-execute — expected head ${head}0 got ${head}1`,
    );
    expect(lines.at(-1)).toBe('1 passed, 3 failed');
    expect(status).toBe(1);
  });

  it('fails an implementation that ignores --trust-key (ATTEST), and exits non-zero', {
    timeout: 60_000,
  }, () => {
    const only = [
      'bundle-full-cycle-trusted',
      'tamper-untrusted-signer',
      'forged-unbundled-segment-untrusted',
    ];
    const { status, lines } = conformance('--impl', broken('ignore-trust-keys'), '--only', only.join(','));
    expect(lines).toContain('PASS  ATTEST   bundle-full-cycle-trusted');
    const failed = (name: string, expected: string) =>
      lines.some((l) => l.startsWith(`FAIL  ATTEST   ${name} — expected ${expected} got ok head=`));
    expect(failed('tamper-untrusted-signer', 'UntrustedAttestation@0')).toBe(true);
    expect(failed('forged-unbundled-segment-untrusted', 'UntrustedAttestation@1')).toBe(true);
    expect(lines.at(-1)).toBe('1 passed, 2 failed');
    expect(status).toBe(1);
  });

  it('fails a case whose implementation hangs, after the timeout', () => {
    const { status, lines } = conformance(
      '--impl',
      broken('hang'),
      '--only',
      'genesis-empty-record',
      '--timeout',
      '500',
    );
    expect(lines).toContain('FAIL  C6       genesis-empty-record — build timed out');
    expect(lines.at(-1)).toBe('0 passed, 1 failed');
    expect(status).toBe(1);
  });

  it('refuses an unknown argument', () => {
    expect(conformance('--frobnicate', 'x').status).toBe(2);
  });

  it('LOG: passes the reference as a command; fails a mutant that repeats the old root, exit 1', () => {
    const only = [
      'consistency-rfc-4-to-7',
      'consistency-rfc-3-to-7',
      'root-seven-leaves',
      'unknown-subcommand',
    ];
    const ok = conformance('--impl', reference, '--class', 'LOG', '--only', only.join(','));
    expect([ok.status, ok.lines.at(-1)]).toEqual([0, '4 passed, 0 failed']);
    const mutant = conformance(
      '--impl',
      `${reference} --mutant repeat-old-root`,
      '--class',
      'LOG',
      '--only',
      only.join(','),
    );
    expect(mutant.lines).toContain(
      'FAIL  LOG      consistency-rfc-4-to-7 — expected {"ok":true} got MalformedProof (/ok: expected true got false)',
    );
    expect([mutant.status, mutant.lines.at(-1)]).toEqual([1, '3 passed, 1 failed']);
  });
});
