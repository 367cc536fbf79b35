import { describe, expect, it } from 'vitest';
import { MAX_WORKSPACE_DIRECTORIES, ProvisionSpec } from './spec.js';

const labels = { tenant: 't', runId: 'r', kind: 'command' } as const;

describe('ProvisionSpec.directories', () => {
  it('defaults to none and keeps relative paths', () => {
    expect(ProvisionSpec.parse({ labels }).directories).toEqual([]);
    expect(ProvisionSpec.parse({ labels, directories: ['out', 'a/b.c/d'] }).directories).toEqual([
      'out',
      'a/b.c/d',
    ]);
  });

  it('refuses a path that is absolute, empty, has an empty, "." or ".." segment, or a NUL', () => {
    for (const bad of ['', '/out', 'out/', 'a//b', '.', './out', 'a/../b', '..', 'a/..', 'o\0ut']) {
      expect(ProvisionSpec.safeParse({ labels, directories: [bad] }).success, JSON.stringify(bad)).toBe(
        false,
      );
    }
  });

  it(`refuses more than ${MAX_WORKSPACE_DIRECTORIES} directories`, () => {
    const many = Array.from({ length: MAX_WORKSPACE_DIRECTORIES + 1 }, (_, i) => `d${i}`);
    expect(ProvisionSpec.safeParse({ labels, directories: many }).success).toBe(false);
    expect(ProvisionSpec.safeParse({ labels, directories: many.slice(1) }).success).toBe(true);
  });
});
