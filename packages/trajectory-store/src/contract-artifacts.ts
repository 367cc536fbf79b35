// The backend contract's artifacts and object metadata (called by contract.ts inside each backend's suite):
// content-addressed artifacts verified on the way out, large objects in parts, when an object was written, and
// the sweep of what nothing references.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ArtifactRef } from '@everdict/run-model';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { expect, it } from 'vitest';
import { sweepArtifacts } from './artifact-sweep.js';
import {
  placeArtifact,
  putArtifact,
  putArtifactsFromDir,
  readArtifact,
  readArtifactBytes,
  stageArtifact,
  toArtifactRef,
} from './artifacts.js';
import { type ContractContext, expectCode, T } from './contract-support.js';
import { layout } from './keys.js';

export function describeArtifactContract(ctx: ContractContext): void {
  it('keeps artifacts content-addressed, verified on the way out', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ts-out-'));
    await mkdir(path.join(dir, 'logs'));
    await writeFile(path.join(dir, 'report.md'), '# report\n');
    await writeFile(path.join(dir, 'logs', 'run.log'), 'line 1\nline 2\n');
    await writeFile(path.join(dir, 'copy.md'), '# report\n');
    const entries = await putArtifactsFromDir(ctx.store().backend, T, dir);
    const hex = (s: string) => `blake3:${bytesToHex(blake3(new TextEncoder().encode(s)))}`;
    expect(entries).toEqual([
      { path: 'copy.md', address: hex('# report\n'), size: 9 },
      { path: 'logs/run.log', address: hex('line 1\nline 2\n'), size: 14 },
      { path: 'report.md', address: hex('# report\n'), size: 9 },
    ]);
    for (const e of entries)
      expect(ArtifactRef.parse(toArtifactRef(e))).toMatchObject({ name: e.path, bytes: e.size });
    const again = await ctx.restart();
    expect((await readArtifactBytes(again.backend, T, entries[1]!.address)).toString()).toBe(
      'line 1\nline 2\n',
    );
    const backend = await ctx.harness().open();
    await backend.put(
      { tenant: T, path: layout.artifact(entries[1]!.address.slice(7)) },
      Buffer.from('line 1\nline 3\n'),
    );
    await backend.close();
    await expectCode(readArtifactBytes(again.backend, T, entries[1]!.address), 'integrity_failed');
    // Streamed, the altered bytes never arrive whole: the last piece waits for the check (here the only one).
    const arrived: Uint8Array[] = [];
    const drain = async () => {
      for await (const piece of await readArtifact(again.backend, T, entries[1]!.address))
        arrived.push(piece);
    };
    await expectCode(drain(), 'integrity_failed');
    expect(arrived).toEqual([]);
    await expectCode(
      putArtifact(ctx.store().backend, T, { path: '../escape', body: Buffer.from('x') }),
      'bad_request',
    );
  });

  it('streams a large object in parts and reads it back byte for byte', async () => {
    const size = 12 * 1024 * 1024 + 123;
    const big = Buffer.alloc(size);
    for (let i = 0; i + 4 <= size; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i);
    async function* pieces() {
      for (let i = 0; i < size; i += 1_000_000) yield big.subarray(i, Math.min(size, i + 1_000_000));
    }
    const entry = await putArtifact(ctx.store().backend, T, { path: 'big.bin', body: pieces() });
    expect(entry.size).toBe(size);
    expect(entry.address).toBe(`blake3:${bytesToHex(blake3(big))}`);
    expect((await readArtifactBytes(ctx.store().backend, T, entry.address)).equals(big)).toBe(true);
  });

  it('reports when each object was written, listed and stat-ed', async () => {
    // S3 keeps LastModified to the second.
    const before = Date.now() - 1000;
    await ctx.store().backend.put({ tenant: T, path: 'when/a' }, Buffer.from('a'));
    const after = Date.now() + 1000;
    const stat = await ctx.store().backend.stat({ tenant: T, path: 'when/a' });
    const listed = [];
    for await (const o of ctx.store().backend.list(T, 'when/')) listed.push(o);
    for (const info of [stat, ...listed]) {
      expect(info?.modifiedAt?.getTime()).toBeGreaterThanOrEqual(before);
      expect(info?.modifiedAt?.getTime()).toBeLessThanOrEqual(after);
    }
    expect(listed.map((o) => o.path)).toEqual(['when/a']);
  });

  it('sweeps artifacts nothing references and staged uploads past their grace, each decision exclusive', async () => {
    const put = (p: string, body: string) =>
      putArtifact(ctx.store().backend, T, { path: p, body: Buffer.from(body) });
    const kept = await put('kept.txt', 'needed');
    const orphan = await put('orphan.txt', 'nobody lists me');
    const also = await put('also.txt', 'nor me');
    const staged = await stageArtifact(ctx.store().backend, T, {
      path: 'half.txt',
      body: Buffer.from('never placed'),
    });
    await ctx
      .store()
      .backend.put({ tenant: T, path: 'artifacts/blake3/zz/not-an-address' }, Buffer.from('x'));
    const inside: string[] = [];
    let open = 0;
    const options = (now: Date) => ({
      now,
      exclusive: async <R>(address: string, fn: (ctx: string) => Promise<R>) => {
        expect(open).toBe(0);
        open++;
        try {
          return await fn(`ctx:${address}`);
        } finally {
          open--;
        }
      },
      isReferenced: async (address: string, ctx: string) => {
        inside.push(ctx);
        return address === kept.address;
      },
    });
    const first = await sweepArtifacts(ctx.store().backend, T, options(new Date()));
    expect(new Set(first.deleted)).toEqual(new Set([orphan.address, also.address]));
    expect(first).toMatchObject({ kept: 1, uploadsDeleted: 0 });
    expect(inside.sort()).toEqual([kept, orphan, also].map((a) => `ctx:${a.address}`).sort());
    expect((await readArtifactBytes(ctx.store().backend, T, kept.address)).toString()).toBe('needed');
    await expectCode(readArtifactBytes(ctx.store().backend, T, orphan.address), 'not_found');
    expect(await ctx.store().backend.stat({ tenant: T, path: staged.upload })).not.toBeNull();
    expect(
      await ctx.store().backend.stat({ tenant: T, path: 'artifacts/blake3/zz/not-an-address' }),
    ).not.toBeNull();
    // A day and more later the staged upload is a leftover; the referenced artifact stays.
    const later = await sweepArtifacts(
      ctx.store().backend,
      T,
      options(new Date(Date.now() + 86_400_000 + 60_000)),
    );
    expect(later).toEqual({ deleted: [], kept: 1, uploadsDeleted: 1 });
    expect(await ctx.store().backend.stat({ tenant: T, path: staged.upload })).toBeNull();
    // Placed after the sweep, the same bytes are written again at their address.
    const back = await put('orphan-again.txt', 'nobody lists me');
    expect(back.address).toBe(orphan.address);
    expect((await readArtifactBytes(ctx.store().backend, T, orphan.address)).toString()).toBe(
      'nobody lists me',
    );
    // Staged bytes already at their address: placing drops the staged copy.
    const twice = await stageArtifact(ctx.store().backend, T, {
      path: 'kept-too.txt',
      body: Buffer.from('needed'),
    });
    expect(await placeArtifact(ctx.store().backend, twice)).toEqual({
      path: 'kept-too.txt',
      address: kept.address,
      size: 6,
    });
    expect(await ctx.store().backend.stat({ tenant: T, path: twice.upload })).toBeNull();
  });
}
