// uploadOut (src/workspace-files.ts) on a real process-driver sandbox: out/'s files stream from the sandbox to
// the upload one at a time, so a file larger than the driver would ever hold as a snapshot (its
// `snapshotCapBytes`, 1 MiB here) is uploaded whole and exact; a file the control plane refuses as too large
// mid-body (413) is left out, journalled, and the files after it still go — but one larger than the bound
// the 413 named is not sent at all. The control plane is a port that
// hashes what it is sent (what it does with the bytes is the control plane's tests').
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { ClientError } from '@everdict/client';
import type { SandboxHandle } from '@everdict/placement';
import { ProcessDriver } from '@everdict/placement-process';
import { afterAll, expect, it } from 'vitest';
import { MAX_SENDS } from '../src/journal.js';
import type { RunnerApi } from '../src/port.js';
import { UPLOADS_IN_FLIGHT, uploadOut } from '../src/workspace-files.js';

const dir = mkdtempSync(join(tmpdir(), 'runner-upload-out-'));
chmodSync(dir, 0o711); // the sandbox user passes through it to the workspaces
const driver = new ProcessDriver({
  stateDir: join(dir, 'state'),
  imagesDir: join(dir, 'images'),
  slots: 1,
  snapshotCapBytes: 1024 * 1024,
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MiB = 1024 * 1024;

/** A sandbox with out/, after `script` ran in it (exit 0 asserted): its handle and what the script printed. */
async function sandboxAfter(runId: string, script: string) {
  const handle = await driver.provision({
    labels: { tenant: 't', runId, kind: 'command' },
    directories: ['out'],
  });
  const ran = await driver.exec(handle, ['sh', '-c', script]);
  expect(ran.exitCode).toBe(0);
  return { handle, stdout: Buffer.from(ran.stdout).toString('utf8') };
}

it('streams out/ file by file: past the snapshot cap uploaded exact, a 413 mid-body skipped and journalled', async () => {
  const { handle, stdout } = await sandboxAfter(
    'upload-out',
    [
      'head -c 8388608 /dev/urandom > out/big.bin',
      'head -c 3145728 /dev/zero > out/refused.bin',
      'head -c 2097153 /dev/zero > out/refused2.bin',
      'mkdir -p out/sub && printf a > out/sub/a.txt && printf z > out/z.txt',
      'sha256sum out/big.bin',
    ].join(' && '),
  );
  try {
    const bigDigest = stdout.split(' ')[0];

    const received = new Map<string, { bytes: number; sha256: string }>();
    const asked: string[] = [];
    const api: Pick<RunnerApi, 'artifact'> = {
      async artifact(_runId, _epoch, path, body: Readable) {
        asked.push(path);
        const hash = createHash('sha256');
        let bytes = 0;
        for await (const chunk of body) {
          hash.update(chunk as Buffer);
          bytes += (chunk as Buffer).byteLength;
          // The control plane answers 413 once a body passes its bound, without reading the rest.
          if (bytes > 2 * MiB && path !== 'big.bin') {
            body.destroy();
            // The real core's problem (control plane, src/runners/artifacts.test.ts): the bound in `details`.
            const problem = { status: 413, code: 'artifact_too_large', details: { maxBytes: 2 * MiB } };
            throw new ClientError('artifact_too_large', 413, 'too large', problem);
          }
        }
        const sha256 = hash.digest('hex');
        received.set(path, { bytes, sha256 });
        return { path, address: sha256, size: bytes };
      },
    };
    const journal: { type: string; code?: string; message?: string }[] = [];
    const { artifacts, unreadable } = await uploadOut(
      { api: api as RunnerApi, driver },
      { runId: 'r', epoch: 1 },
      handle,
      {},
      new AbortController().signal,
      { append: async (e) => void journal.push(e as never) },
    );
    expect(unreadable).toBeUndefined();
    expect(artifacts.map((a) => a.name)).toEqual(['big.bin', 'sub/a.txt', 'z.txt']);
    expect(received.get('big.bin')).toEqual({ bytes: 8 * MiB, sha256: bigDigest });
    expect(received.get('z.txt')?.bytes).toBe(1);
    // The 413 named the bound: refused2.bin (larger than it) was never sent.
    expect(asked).toEqual(['big.bin', 'refused.bin', 'sub/a.txt', 'z.txt']);
    expect(journal.map((e) => [e.type, e.code, e.message])).toEqual([
      ['error', 'artifact_too_large', expect.stringContaining('out/refused.bin (3145728 bytes)')],
      ['error', 'artifact_too_large', expect.stringContaining('out/refused2.bin (2097153 bytes)')],
    ]);
  } finally {
    await driver.dispose(handle);
  }
});

/** A sandbox whose out/ holds `n` small files `f00…` (each its own name, a few bytes). */
async function smallFiles(runId: string, n: number) {
  const names = Array.from({ length: n }, (_, i) => `f${String(i).padStart(2, '0')}.txt`);
  const { handle } = await sandboxAfter(runId, names.map((f) => `printf ${f} > out/${f}`).join(' && '));
  return { handle, names };
}

/** `uploadOut` of the sandbox's out/ to `api`, with no journal and no abort. */
const uploadAll = (api: Pick<RunnerApi, 'artifact'>, handle: SandboxHandle) =>
  uploadOut(
    { api: api as RunnerApi, driver },
    { runId: 'r', epoch: 1 },
    handle,
    {},
    new AbortController().signal,
    { append: async () => undefined },
  );

it('sends small files several at a time, never more than UPLOADS_IN_FLIGHT, each exact', async () => {
  const { handle, names } = await smallFiles('upload-many', 12);
  try {
    let current = 0;
    let most = 0;
    // The first UPLOADS_IN_FLIGHT uploads are held until that many are in flight at once: one at a time, the
    // first would wait for ever (the test times out).
    let open!: () => void;
    const opened = new Promise<void>((r) => {
      open = r;
    });
    const received = new Map<string, string>();
    const api: Pick<RunnerApi, 'artifact'> = {
      async artifact(_runId, _epoch, path, body: Readable) {
        current += 1;
        most = Math.max(most, current);
        if (current === UPLOADS_IN_FLIGHT) open();
        try {
          const text = Buffer.concat(await body.toArray()).toString('utf8');
          await opened;
          received.set(path, text);
          return { path, address: `a-${path}`, size: text.length };
        } finally {
          current -= 1;
        }
      },
    };
    const { artifacts } = await uploadAll(api, handle);
    expect(most).toBe(UPLOADS_IN_FLIGHT);
    expect(artifacts.map((a) => a.name)).toEqual(names);
    expect(Object.fromEntries(received)).toEqual(Object.fromEntries(names.map((f) => [f, f])));
  } finally {
    await driver.dispose(handle);
  }
}, 30_000);

it('an upload that fails stops the rest: the ones in flight are waited for, its error is thrown', async () => {
  const { handle } = await smallFiles('upload-fails', 12);
  try {
    let current = 0;
    const asked: string[] = [];
    const api: Pick<RunnerApi, 'artifact'> = {
      async artifact(_runId, _epoch, path, body: Readable) {
        asked.push(path);
        current += 1;
        try {
          await body.toArray();
          await new Promise((r) => setImmediate(r));
          if (path === 'f02.txt') throw new Error('the control plane is gone');
          return { path, address: `a-${path}`, size: 3 };
        } finally {
          current -= 1;
        }
      },
    };
    await expect(uploadAll(api, handle)).rejects.toThrow('the control plane is gone');
    expect(current).toBe(0);
    expect(asked.length).toBeLessThan(12);
  } finally {
    await driver.dispose(handle);
  }
}, 30_000);

it('a small file whose upload failed transiently (503, no answer) is sent again; a refusal is not', async () => {
  const { handle, names } = await smallFiles('upload-retry', 6);
  try {
    const asked: string[] = [];
    const api: Pick<RunnerApi, 'artifact'> = {
      async artifact(_runId, _epoch, path, body: Readable) {
        asked.push(path);
        const text = Buffer.concat(await body.toArray()).toString('utf8');
        const tries = asked.filter((p) => p === path).length;
        // The control plane's storage failing twice (its 503), then the connection lost once: sent again each time.
        if (path === 'f01.txt' && tries <= 2)
          throw new ClientError('storage_unavailable', 503, 'storage is unavailable');
        if (path === 'f03.txt' && tries === 1) throw new ClientError('network', 0, 'socket hang up');
        // Every try carries the whole file.
        expect(text).toBe(path);
        return { path, address: `a-${path}`, size: text.length };
      },
    };
    const { artifacts } = await uploadAll(api, handle);
    expect(artifacts.map((a) => a.name)).toEqual(names);
    expect(asked.filter((p) => p === 'f01.txt')).toHaveLength(3);
    expect(asked.filter((p) => p === 'f03.txt')).toHaveLength(2);
    expect(asked).toHaveLength(names.length + 3);

    // A refusal (4xx) is final: the interval fails with it, as before.
    let refusals = 0;
    const refusing: Pick<RunnerApi, 'artifact'> = {
      async artifact(_runId, _epoch, path, body: Readable) {
        await body.toArray();
        if (path === 'f02.txt') refusals += 1;
        if (path === 'f02.txt') throw new ClientError('stale_lease', 409, 'the lease is gone');
        return { path, address: `a-${path}`, size: 3 };
      },
    };
    await expect(uploadAll(refusing, handle)).rejects.toMatchObject({ code: 'stale_lease' });
    expect(refusals).toBe(1);
  } finally {
    await driver.dispose(handle);
  }
}, 30_000);

it('a streamed file whose upload failed transiently is read again from out/ and sent whole; sends are bounded', async () => {
  const { handle, stdout } = await sandboxAfter(
    'upload-stream-retry',
    'head -c 1048576 /dev/urandom > out/big.bin && printf a > out/a.txt && sha256sum out/big.bin',
  );
  try {
    const digest = stdout.split(' ')[0];
    const asked: string[] = [];
    const received = new Map<string, string>();
    /** An api whose upload of big.bin fails after half of it, `failing` times (503: transient). */
    const api = (failing: number): Pick<RunnerApi, 'artifact'> => ({
      async artifact(_runId, _epoch, path, body: Readable) {
        asked.push(path);
        const hash = createHash('sha256');
        let bytes = 0;
        for await (const chunk of body) {
          hash.update(chunk as Buffer);
          bytes += (chunk as Buffer).byteLength;
          if (path === 'big.bin' && bytes > MiB / 2 && asked.filter((p) => p === path).length <= failing) {
            body.destroy();
            throw new ClientError('storage_unavailable', 503, 'storage is unavailable');
          }
        }
        received.set(path, hash.digest('hex'));
        return { path, address: `a-${path}`, size: bytes };
      },
    });
    const { artifacts } = await uploadAll(api(2), handle);
    expect(artifacts.map((a) => [a.name, a.bytes])).toEqual([
      ['a.txt', 1],
      ['big.bin', MiB],
    ]);
    expect(received.get('big.bin')).toBe(digest); // the third send: whole and exact
    expect(asked.filter((p) => p === 'big.bin')).toHaveLength(3);
    expect(asked.filter((p) => p === 'a.txt')).toHaveLength(1); // the passes again left the others unread

    // Failing every time: sent MAX_SENDS times in all, then its failure is thrown.
    asked.length = 0;
    await expect(uploadAll(api(Number.POSITIVE_INFINITY), handle)).rejects.toMatchObject({
      code: 'storage_unavailable',
    });
    expect(asked.filter((p) => p === 'big.bin')).toHaveLength(MAX_SENDS);
  } finally {
    await driver.dispose(handle);
  }
}, 60_000);
