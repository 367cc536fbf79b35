// The README's example is examples/quickstart.mjs, verbatim; this runs it against the built package.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const pkg = fileURLToPath(new URL('..', import.meta.url));

describe('README example', () => {
  it('is examples/quickstart.mjs verbatim', () => {
    const readme = readFileSync(`${pkg}README.md`, 'utf8');
    const example = readFileSync(`${pkg}examples/quickstart.mjs`, 'utf8');
    expect(readme).toContain(example.trim());
  });

  it('runs and prints what it claims', () => {
    const r = spawnSync(process.execPath, [`${pkg}examples/quickstart.mjs`], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('refused: ZeroIdleEnergy at 2 — length still 2');
    expect(r.stdout).toContain('verified: true closed account non_blocking');
    expect(r.stdout).toContain(
      'cost µJ: {"activeUj":"48200000","idleUj":"86400","totalUj":"48286400","unresolved":0} — signed by the steward: true',
    );
    expect(r.stdout).toContain('edited: AttestationMismatch');
  });
});
