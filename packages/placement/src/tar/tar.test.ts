// The deterministic tar: header fields, order, path safety, leniency for imported tarballs, round trips,
// and the property that the same tree gives the same bytes however and whenever it was made.
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pack } from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { PlacementError } from '../errors.js';
import { restoreDirectory, snapshotDirectory } from '../snapshot.js';
import type { TarEntry } from './tar-entry.js';
import { sortEntries } from './tar-entry.js';
import { canonicalTar, isCanonicalTar, readTar } from './tar-reader.js';
import { writeTar } from './tar-writer.js';
import { readTree, writeTree } from './tree.js';

const temps: string[] = [];
async function temp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'everdict-tar-'));
  temps.push(d);
  return d;
}
afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

const file = (path: string, text: string, mode = 0o644): TarEntry => ({
  type: 'file',
  path,
  mode,
  data: Buffer.from(text),
});

describe('writeTar', () => {
  it('writes ustar headers with mtime 0, uid/gid 0, no names, mode kept, entries sorted by path', async () => {
    const bytes = await writeTar([
      file('b.txt', 'bee', 0o755),
      { type: 'directory', path: 'a', mode: 0o750 },
      file('a/z.txt', 'zed'),
      { type: 'symlink', path: 'link', mode: 0o777, target: 'b.txt' },
    ]);
    expect(bytes.byteLength % 512).toBe(0);
    const listing = execFileSync('tar', ['--numeric-owner', '--full-time', '-tvf', '-'], {
      input: bytes,
    }).toString();
    const lines = listing.trim().split('\n');
    expect(lines.map((l) => l.split(/\s+/).slice(5).join(' '))).toEqual([
      'a/',
      'a/z.txt',
      'b.txt',
      'link -> b.txt',
    ]);
    expect(lines[0]).toMatch(/^drwxr-x--- 0\/0 +0 1970-01-01 00:00:00 a\/$/);
    expect(lines[2]).toMatch(/^-rwxr-xr-x 0\/0 +3 1970-01-01 00:00:00 b.txt$/);
    const header = Buffer.from(bytes.subarray(0, 512));
    expect(header.subarray(257, 263).toString('latin1')).toBe('ustar\0');
    expect(header.subarray(265, 265 + 32).every((b) => b === 0)).toBe(true);
  });

  it('keeps long and non-ASCII names exactly (pax records), and GNU tar reads them back', async () => {
    const long = `${'d'.repeat(120)}/${'f'.repeat(150)}.txt`;
    const bytes = await writeTar([file(long, 'long'), file('čaj/ünï.txt', 'utf8')]);
    const back = await readTar(bytes);
    expect(back.map((e) => e.path).sort()).toEqual(['čaj/ünï.txt', long].sort());
    const names = execFileSync('tar', ['-tf', '-'], { input: bytes }).toString().trim().split('\n');
    expect(names).toContain(long);
    expect(await isCanonicalTar(bytes)).toBe(true);
  });

  it('refuses unsafe or duplicate paths with snapshot_mismatch', async () => {
    for (const path of ['../x', '/etc/passwd', 'a/../../b', 'a//b', '.']) {
      await expect(writeTar([file(path, 'x')])).rejects.toMatchObject({ code: 'snapshot_mismatch' });
    }
    await expect(writeTar([file('a', '1'), file('./a', '2')])).rejects.toBeInstanceOf(PlacementError);
  });
});

describe('readTar', () => {
  it('reads a GNU tar leniently: hard links become copies, gzip is unwrapped, fifos are skipped on request', async () => {
    const dir = await temp();
    await writeFile(join(dir, 'one'), 'shared');
    execFileSync('ln', [join(dir, 'one'), join(dir, 'two')]);
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const tgz = execFileSync('tar', ['-czf', '-', '-C', dir, '.']);
    await expect(readTar(tgz)).rejects.toMatchObject({ code: 'snapshot_mismatch' });
    const entries = await readTar(tgz, { skipSpecial: true });
    const byPath = new Map(entries.map((e) => [e.path, e]));
    expect([...byPath.keys()].sort()).toEqual(['one', 'two']);
    const two = byPath.get('two');
    expect(two?.type === 'file' && Buffer.from(two.data).toString()).toBe('shared');
    expect(await isCanonicalTar(tgz)).toBe(false);
    expect(await isCanonicalTar(await canonicalTar(tgz, { skipSpecial: true }))).toBe(true);
  });

  it('refuses bytes that are not a tar', async () => {
    await expect(readTar(Buffer.from('certainly not a tar archive'.repeat(40)))).rejects.toMatchObject({
      code: 'snapshot_mismatch',
    });
  });
});

describe('writeTree', () => {
  it('never writes through a symlink from the same archive', async () => {
    const outside = await temp();
    const dir = await temp();
    const entries: TarEntry[] = [
      { type: 'symlink', path: 'esc', mode: 0o777, target: outside },
      file('esc/owned.txt', 'x'),
    ];
    await expect(writeTree(dir, entries)).rejects.toMatchObject({ code: 'snapshot_mismatch' });
    await expect(readFile(join(outside, 'owned.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('snapshot round trip', () => {
  it('restores byte for byte and refuses a mismatched address without touching the directory', async () => {
    const src = await temp();
    await mkdir(join(src, 'sub/deeper'), { recursive: true });
    await writeFile(join(src, 'sub/deeper/data.bin'), Buffer.from([0, 255, 7]));
    await writeFile(join(src, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    await chmod(join(src, 'sub'), 0o700);
    await symlink('run.sh', join(src, 'alias'));
    const snap = await snapshotDirectory(src);
    const root = await temp();
    const dst = join(root, 'ws');
    await mkdir(dst);
    await writeFile(join(dst, 'old.txt'), 'old');
    await expect(restoreDirectory(dst, { address: '0'.repeat(64), bytes: snap.bytes })).rejects.toMatchObject(
      {
        code: 'snapshot_mismatch',
      },
    );
    expect(await readFile(join(dst, 'old.txt'), 'utf8')).toBe('old');
    await restoreDirectory(dst, snap);
    expect(await snapshotDirectory(dst)).toEqual(snap);
    expect(execFileSync('diff', ['-r', '--no-dereference', src, dst]).toString()).toBe('');
  });
});

// A tree: unique relative paths of files (content, mode), directories (mode) and symlinks.
const segment = fc.stringMatching(/^[a-zA-Z0-9._-]{1,12}$/).filter((s) => s !== '.' && s !== '..');
const node = fc.record({
  path: fc.array(segment, { minLength: 1, maxLength: 3 }),
  kind: fc.constantFrom('file', 'dir', 'symlink'),
  content: fc.uint8Array({ maxLength: 300 }),
  mode: fc.constantFrom(0o644, 0o600, 0o755, 0o700, 0o444),
});

/** Keeps a consistent tree: no path below a file or symlink, each path once. */
function consistent(nodes: Array<{ path: string[]; kind: string; content: Uint8Array; mode: number }>) {
  const kinds = new Map<string, string>();
  const out: typeof nodes = [];
  for (const n of nodes) {
    const p = n.path.join('/');
    if (kinds.has(p)) continue;
    let ok = true;
    for (let i = 1; i < n.path.length; i++) {
      const k = kinds.get(n.path.slice(0, i).join('/'));
      if (k !== undefined && k !== 'dir') ok = false;
    }
    if (!ok) continue;
    if (n.kind !== 'dir' && [...kinds.keys()].some((q) => q.startsWith(`${p}/`))) continue;
    kinds.set(p, n.kind);
    out.push(n);
  }
  return out;
}

async function build(root: string, nodes: ReturnType<typeof consistent>, order: number[], mtimeSeed: number) {
  for (const i of order) {
    const n = nodes[i]!;
    const abs = join(root, ...n.path);
    await mkdir(join(root, ...n.path.slice(0, -1)), { recursive: true });
    if (n.kind === 'dir') await mkdir(abs, { recursive: true });
    else if (n.kind === 'file') await writeFile(abs, n.content);
    else await symlink(`target-${n.path.length}`, abs);
  }
  for (const i of order) {
    const n = nodes[i]!;
    const abs = join(root, ...n.path);
    if (n.kind !== 'symlink') {
      await chmod(abs, n.kind === 'dir' ? n.mode | 0o700 : n.mode);
      await utimes(abs, mtimeSeed + i * 1000, mtimeSeed + i * 7);
    }
  }
}

describe('determinism (property)', () => {
  it('the same tree gives the same bytes and address whatever the creation order and mtimes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(node, { minLength: 1, maxLength: 12 }).map(consistent),
        fc.integer({ min: 1, max: 2_000_000_000 }),
        fc.integer({ min: 1, max: 2_000_000_000 }),
        async (nodes, t1, t2) => {
          const a = await temp();
          const b = await temp();
          const forward = nodes.map((_, i) => i);
          await build(a, nodes, forward, t1);
          await build(b, nodes, [...forward].reverse(), t2);
          const sa = await snapshotDirectory(a);
          const sb = await snapshotDirectory(b);
          expect(Buffer.from(sb.bytes).equals(Buffer.from(sa.bytes))).toBe(true);
          expect(sb.address).toBe(sa.address);
          const entries = await readTree(a);
          expect(await writeTar([...entries].reverse())).toEqual(sa.bytes);
          await rm(a, { recursive: true });
          await rm(b, { recursive: true });
        },
      ),
      { numRuns: 40 },
    );
  });
});

/** The reference: tar-stream's pack given the same sorted entries and header fields. */
async function referenceTar(entries: TarEntry[]): Promise<Uint8Array> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of p) chunks.push(c as Buffer);
  })();
  for (const e of sortEntries(entries)) {
    const common = { mode: e.mode & 0o7777, uid: 0, gid: 0, mtime: new Date(0), uname: '', gname: '' };
    if (e.type === 'file')
      p.entry({ ...common, name: e.path, type: 'file', size: e.data.byteLength }, Buffer.from(e.data));
    else if (e.type === 'directory')
      p.entry({ ...common, name: `${e.path}/`, type: 'directory', size: 0 }, Buffer.alloc(0));
    else p.entry({ ...common, name: e.path, type: 'symlink', size: 0, linkname: e.target }, Buffer.alloc(0));
  }
  p.finalize();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

describe('the writer against tar-stream (property)', () => {
  const part = fc
    .oneof(
      fc.stringMatching(/^[a-z0-9._-]{1,40}$/),
      fc.constantFrom('ünï', 'čaj', '日本', 'x'.repeat(99), 'y'.repeat(101), 'emoji-😀'),
    )
    .filter((s) => s !== '.' && s !== '..');
  const entry = fc.record({
    path: fc.array(part, { minLength: 1, maxLength: 6 }).map((xs) => xs.join('/')),
    kind: fc.constantFrom('file', 'directory', 'symlink'),
    // mode 0 aside: tar-stream's pack replaces a 0 mode by 0644/0755; ours keeps it (see the test below)
    mode: fc.integer({ min: 1, max: 0o7777 }),
    size: fc.oneof(fc.constantFrom(0, 1, 511, 512, 513, 1024), fc.integer({ min: 0, max: 3000 })),
    target: fc.oneof(fc.constant('t'), fc.constant('z'.repeat(150)), fc.constant('ünï/target')),
  });

  it('writes exactly the bytes tar-stream writes for the same entries', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 12 }), async (raw) => {
        const entries: TarEntry[] = raw.map((r) =>
          r.kind === 'file'
            ? { type: 'file', path: r.path, mode: r.mode, data: new Uint8Array(r.size).fill(r.size & 0xff) }
            : r.kind === 'directory'
              ? { type: 'directory', path: r.path, mode: r.mode }
              : { type: 'symlink', path: r.path, mode: r.mode, target: r.target },
        );
        const ours = await writeTar(entries);
        expect(Buffer.from(ours).equals(Buffer.from(await referenceTar(entries)))).toBe(true);
        expect((await readTar(ours)).map((e) => e.path)).toEqual(sortEntries(entries).map((e) => e.path));
      }),
      { numRuns: 200 },
    );
  });

  it('keeps a 0 mode as 0 (where tar-stream would write 0644)', async () => {
    const bytes = await writeTar([{ type: 'file', path: 'locked', mode: 0, data: new Uint8Array(0) }]);
    expect(Buffer.from(bytes.subarray(100, 108)).toString('latin1')).toBe('000000 \0');
    expect((await readTar(bytes))[0]?.mode).toBe(0);
  });
});
