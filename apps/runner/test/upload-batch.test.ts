// uploadOut's batches (src/workspace-files.ts) on a real process-driver sandbox: files of at most
// BATCHED_ARTIFACT_BYTES go up several to a call (`RunnerApi.artifacts`), each batch within BATCH_FILES and
// about BATCH_BYTES, each file exactly once, larger ones alone as before; a file the batch answers 413 is left
// out and journalled; a batch that failed transiently is
// sent again whole; a control plane without the route gets each file alone. The control plane is a port that
// records what it is sent (the route itself: control plane, src/runners/artifact-batch.test.ts).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { ClientError } from '@everdict/client';
import type { SandboxHandle } from '@everdict/placement';
import { ProcessDriver } from '@everdict/placement-process';
import { afterAll, expect, it } from 'vitest';
import type { BatchFile, BatchResult, RunnerApi } from '../src/port.js';
import { BATCH_BYTES, BATCH_FILES, BATCHED_ARTIFACT_BYTES, uploadOut } from '../src/workspace-files.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-upload-batch-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
const driver = new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images'), slots: 1 });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function sandboxAfter(runId: string, script: string): Promise<SandboxHandle> {
  const handle = await driver.provision({
    labels: { tenant: 't', runId, kind: 'command' },
    directories: ['out'],
  });
  const ran = await driver.exec(handle, ['sh', '-c', script]);
  expect(ran.exitCode, Buffer.from(ran.stderr).toString()).toBe(0);
  return handle;
}

/** A port that records each batch and each single upload, and stores what it is sent by path. */
function recordingApi(answer?: (f: BatchFile, call: number) => BatchResult | Error | undefined) {
  const batches: string[][] = [];
  const batchBytes: number[] = [];
  const singles: string[] = [];
  const stored = new Map<string, string>();
  const api: Pick<RunnerApi, 'artifact' | 'artifacts'> = {
    async artifact(_runId, _epoch, path, body: Readable) {
      const bytes = Buffer.concat(await body.toArray());
      singles.push(path);
      stored.set(path, bytes.toString('utf8'));
      return { path, address: `a-${path}`, size: bytes.length };
    },
    async artifacts(_runId, _epoch, files) {
      batches.push(files.map((f) => f.path));
      batchBytes.push(files.reduce((n, f) => n + f.bytes.length, 0));
      const results: BatchResult[] = [];
      for (const f of files) {
        const a = answer?.(f, batches.length);
        if (a instanceof Error) throw a;
        if (a) results.push(a);
        else {
          stored.set(f.path, f.bytes.toString('utf8'));
          results.push({ path: f.path, status: 201, address: `a-${f.path}`, size: f.bytes.length });
        }
      }
      return results;
    },
  };
  return { api: api as RunnerApi, batches, batchBytes, singles, stored };
}

const journalled: { type: string; code?: string; message?: string }[] = [];
const upload = (api: RunnerApi, handle: SandboxHandle) =>
  uploadOut({ api, driver }, { runId: 'r', epoch: 1 }, handle, {}, new AbortController().signal, {
    append: async (e) => void journalled.push(e as never),
  });

it('sends small files in batches within BATCH_FILES and BATCH_BYTES, each once; larger ones alone', async () => {
  // 150 tiny files, 6 of 60 KiB (within BATCHED_ARTIFACT_BYTES), one of 100 KiB (a small file, alone), one of 2 MiB.
  const handle = await sandboxAfter(
    'batches',
    [
      'for i in $(seq 100 249); do printf "t$i" > out/t$i.txt; done',
      'for i in 1 2 3 4 5 6; do head -c 61440 /dev/zero | tr "\\0" "$i" > out/m$i.bin; done',
      'head -c 102400 /dev/zero | tr "\\0" s > out/small.bin',
      'head -c 2097152 /dev/zero | tr "\\0" L > out/large.bin',
    ].join(' && '),
  );
  try {
    const r = recordingApi();
    const { artifacts } = await upload(r.api, handle);
    const tiny = Array.from({ length: 150 }, (_, i) => `t${i + 100}.txt`);
    const mid = [1, 2, 3, 4, 5, 6].map((i) => `m${i}.bin`);
    expect(artifacts.map((a) => a.name)).toEqual([...tiny, 'large.bin', ...mid, 'small.bin'].sort());
    const batched = r.batches.flat();
    expect(batched.sort()).toEqual([...tiny, ...mid].sort()); // each once, in some batch
    expect(r.singles.sort()).toEqual(['large.bin', 'small.bin']);
    for (const [i, b] of r.batches.entries()) {
      expect(b.length).toBeLessThanOrEqual(BATCH_FILES);
      expect(r.batchBytes[i]).toBeLessThan(BATCH_BYTES + BATCHED_ARTIFACT_BYTES);
    }
    // 156 files in batches: at least ⌈156 / 64⌉ calls, and the 60-KiB files pushed past the byte bound once.
    expect(r.batches.length).toBeGreaterThanOrEqual(3);
    expect(r.batches.length).toBeLessThan(10);
    expect(r.batchBytes.some((n) => n >= BATCH_BYTES)).toBe(true);
    for (const t of tiny) expect(r.stored.get(t)).toBe(t.replace('.txt', ''));
    expect(r.stored.get('m3.bin')).toBe('3'.repeat(61_440));
    expect(artifacts.find((a) => a.name === 'm3.bin')).toMatchObject({ bytes: 61_440, digest: 'a-m3.bin' });
  } finally {
    await driver.dispose(handle);
  }
}, 60_000);

it('files a batch answers 413 are left out, each journalled by name; the rest are stored', async () => {
  const handle = await sandboxAfter(
    'batch-413',
    'printf 12345678901 > out/a-eleven.txt && printf ok > out/b-ok.txt && head -c 20000 /dev/zero > out/c-big.bin',
  );
  journalled.length = 0;
  try {
    // The control plane's bound is 10 bytes: a-eleven.txt answered 413 in its batch.
    const r = recordingApi((f) =>
      f.bytes.length > 10 ? { path: f.path, status: 413, maxBytes: 10 } : undefined,
    );
    const { artifacts } = await upload(r.api, handle);
    expect(artifacts.map((a) => a.name)).toEqual(['b-ok.txt']);
    expect(journalled.map((e) => [e.type, e.code])).toContainEqual(['error', 'artifact_too_large']);
    expect(journalled.some((e) => e.message?.includes('out/a-eleven.txt (11 bytes)'))).toBe(true);
    expect(journalled.some((e) => e.message?.includes('out/c-big.bin (20000 bytes)'))).toBe(true);
    expect([...r.stored.keys()]).toEqual(['b-ok.txt']);
  } finally {
    await driver.dispose(handle);
  }
}, 60_000);

it('a batch that failed transiently is sent again whole; a control plane without the route gets each file alone', async () => {
  const handle = await sandboxAfter('batch-retry', 'for i in 1 2 3 4 5; do printf "f$i" > out/f$i.txt; done');
  try {
    const flaky = recordingApi((_f, call) =>
      call === 1 ? new ClientError('storage_unavailable', 503, 'storage is unavailable') : undefined,
    );
    const { artifacts } = await upload(flaky.api, handle);
    expect(artifacts.map((a) => a.name)).toEqual(['f1.txt', 'f2.txt', 'f3.txt', 'f4.txt', 'f5.txt']);
    expect(flaky.batches).toHaveLength(2);
    expect(flaky.batches[1]).toEqual(flaky.batches[0]);
    expect(flaky.singles).toEqual([]);

    const older = recordingApi(() => new ClientError('route_not_found', 404, 'no such route'));
    const alone = await upload(older.api, handle);
    expect(alone.artifacts.map((a) => a.name)).toEqual(['f1.txt', 'f2.txt', 'f3.txt', 'f4.txt', 'f5.txt']);
    expect(older.batches).toHaveLength(1);
    expect(older.singles.sort()).toEqual(['f1.txt', 'f2.txt', 'f3.txt', 'f4.txt', 'f5.txt']);
    for (let i = 1; i <= 5; i++) expect(older.stored.get(`f${i}.txt`)).toBe(`f${i}`);
  } finally {
    await driver.dispose(handle);
  }
}, 60_000);
