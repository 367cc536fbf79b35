import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeDirectories } from './directories.js';

const root = mkdtempSync(join(tmpdir(), 'cli-dirs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('makeDirectories', () => {
  it('makes every missing ancestor, and keeps one already there', () => {
    const deep = join(root, 'a', 'b', 'c');
    makeDirectories(deep);
    expect(existsSync(deep)).toBe(true);
    makeDirectories(deep);
    makeDirectories(join(root, 'a'));
  });

  it('throws what the system said where a directory cannot be made', () => {
    writeFileSync(join(root, 'file'), 'x');
    expect(() => makeDirectories(join(root, 'file', 'd'))).toThrow(
      expect.objectContaining({ code: 'ENOTDIR' }),
    );
  });

  // Node 20's recursive mkdir never returns here (the test would time out): this one throws at once.
  it('throws under /proc instead of spinning', () => {
    expect(() => makeDirectories('/proc/everdict-no-such-dir/x')).toThrow(
      expect.objectContaining({ code: 'ENOENT' }),
    );
  });
});
