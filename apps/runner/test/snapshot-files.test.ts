// onlyDirectories (src/snapshot-files.ts): the interval skips parsing a snapshot that holds directories only
// — and answers true only where readTar would give directories only (property test), false for anything it
// does not recognise (gzip, a bad checksum, bytes after the end, an archive GNU tar wrote with a file).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { readTar, type TarEntry, writeTar } from '@everdict/placement';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { onlyDirectories } from '../src/snapshot-files.js';

const dir = (path: string): TarEntry => ({ type: 'directory', path, mode: 0o755 });

describe('onlyDirectories', () => {
  it('directories only (out/ and nothing in it, or nothing at all): true', async () => {
    expect(onlyDirectories(await writeTar([]))).toBe(true);
    expect(onlyDirectories(await writeTar([dir('out')]))).toBe(true);
    expect(onlyDirectories(await writeTar([dir('out'), dir('out/a'), dir('tmp')]))).toBe(true);
  });

  it('any file, symlink, or a file outside out/: false (the archive is parsed)', async () => {
    const data = new TextEncoder().encode('hi');
    expect(
      onlyDirectories(await writeTar([dir('out'), { type: 'file', path: 'out/a.txt', mode: 0o644, data }])),
    ).toBe(false);
    expect(
      onlyDirectories(await writeTar([dir('out'), { type: 'file', path: 'case.json', mode: 0o644, data }])),
    ).toBe(false);
    expect(
      onlyDirectories(
        await writeTar([dir('out'), { type: 'symlink', path: 'l', mode: 0o777, target: 'out' }]),
      ),
    ).toBe(false);
    // Empty files too: an empty out/ file is still an artifact.
    expect(
      onlyDirectories(await writeTar([{ type: 'file', path: 'out/e', mode: 0o644, data: new Uint8Array() }])),
    ).toBe(false);
  });

  it('what it does not recognise is false: gzip, a bad checksum, bytes after the end, a cut archive', async () => {
    const plain = await writeTar([dir('out')]);
    expect(onlyDirectories(gzipSync(plain))).toBe(false);
    const bad = Uint8Array.from(plain);
    bad[0] = bad[0]! ^ 1; // the name changed, the checksum not
    expect(onlyDirectories(bad)).toBe(false);
    const trailing = Uint8Array.from(plain);
    trailing[trailing.length - 1] = 1;
    expect(onlyDirectories(trailing)).toBe(false);
    expect(onlyDirectories(plain.subarray(0, 700))).toBe(false);
  });

  it('GNU tar archives (another driver): directories only → true, with a file → false', () => {
    const ws = mkdtempSync(join(tmpdir(), 'rcpu2-snapshot-files-'));
    try {
      mkdirSync(join(ws, 'out', 'sub'), { recursive: true });
      const dirs = execFileSync('tar', ['-cf', '-', '-C', ws, '.']);
      expect(onlyDirectories(dirs)).toBe(true);
      writeFileSync(join(ws, 'out', 'f'), 'x');
      expect(onlyDirectories(execFileSync('tar', ['-cf', '-', '-C', ws, '.']))).toBe(false);
      rmSync(join(ws, 'out', 'f'));
      symlinkSync('sub', join(ws, 'out', 'l'));
      expect(onlyDirectories(execFileSync('tar', ['-cf', '-', '-C', ws, '.']))).toBe(false);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it('property: true exactly when readTar gives directories only (canonical archives)', async () => {
    const name = fc.stringMatching(/^[a-z]{1,6}$/);
    const entry = fc.oneof(
      fc.tuple(fc.array(name, { minLength: 1, maxLength: 3 })).map(([p]) => dir(p.join('/'))),
      fc
        .tuple(fc.array(name, { minLength: 1, maxLength: 3 }), fc.uint8Array({ maxLength: 600 }))
        .map(([p, data]): TarEntry => ({ type: 'file', path: p.join('/'), mode: 0o644, data })),
      fc
        .tuple(fc.array(name, { minLength: 1, maxLength: 3 }), name)
        .map(([p, target]): TarEntry => ({ type: 'symlink', path: p.join('/'), mode: 0o777, target })),
    );
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 8 }), async (entries) => {
        const bytes = await writeTar(entries);
        const read = await readTar(bytes, { skipSpecial: true });
        expect(onlyDirectories(bytes)).toBe(read.every((e) => e.type === 'directory'));
      }),
      { numRuns: 300 },
    );
  });
});
