// A run's artifacts, from the runner's upload to a user's download, on the real core: a completion lists only
// what was stored under its lease (anything else is 409 attestation_mismatch and changes nothing), and
// `GET /runs/:id/artifact?path=` serves exactly the listed bytes — verified against their address as they
// stream, so bytes altered in the store never arrive whole.

import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readTar } from '@everdict/placement';
import { blake3, bytesToHex } from '@everdict/runrecord';
import { serve } from '@hono/node-server';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, type TestApp, testApp } from '../http/testing/harness.js';
import {
  COMMAND_CAPS,
  completeTestLease,
  downloadTestArtifact,
  leaseCommandRun,
  leaseRuns,
  pairTestRunner,
  type TestLease,
  type TestRunner,
  uploadTestArtifact,
} from '../http/testing/runners.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ executors: [], artifactMaxBytes: 64 * 1024 });
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const complete = (r: TestRunner, l: TestLease, artifacts?: unknown[]) =>
  completeTestLease(t.app, r, l, artifacts);
const upload = (r: TestRunner, l: TestLease, path: string, body: string) =>
  uploadTestArtifact(t.app, r, l, path, body);
const download = (runId: string, path: string, key = ADMIN_KEY) =>
  downloadTestArtifact(t.app, runId, path, key);

const leasedRun = (r: TestRunner) => leaseCommandRun(t.app, r);

/** Replaces the stored bytes of the artifact at `digest` in the store (the control plane never would). */
const alter = async (digest: string, bytes: string) => {
  const backend = t.core.trajectories!.store.backend;
  const hex = digest.slice('blake3:'.length);
  let key: { tenant: string; path: string } | undefined;
  for await (const o of backend.list('default', 'artifacts/'))
    if (o.path.endsWith(hex)) key = { tenant: 'default', path: o.path };
  expect(key).toBeDefined();
  await backend.put(key!, new TextEncoder().encode(bytes));
};

/** The tenant's staged uploads and stored artifacts, by path. */
const storedObjects = async () => {
  const paths: string[] = [];
  for await (const o of t.core.trajectories!.store.backend.list('default', '')) paths.push(o.path);
  return paths.filter((p) => p.startsWith('uploads/') || p.startsWith('artifacts/')).sort();
};

const runOf = async (id: string) =>
  (await call(t.app, 'GET', `/runs/${id}`, { key: ADMIN_KEY })).body as {
    status: string;
    outputs: { artifacts?: unknown[] };
  };

describe("a completion's artifacts", () => {
  it('are refused unless each was stored under the lease, as listed; the run stays running', async () => {
    const r = await pairTestRunner(t.app, { name: 'claims', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const report = await upload(r, l, 'report.txt', 'artifact bytes');
    const other = await upload(r, l, 'other.txt', 'other bytes');
    const wrongClaims: [string, unknown[]][] = [
      ['never uploaded', [{ ...report, name: 'missing.txt' }]],
      ['another artifact’s address', [{ ...report, uri: other.uri, digest: other.digest }]],
      ['a size not stored', [{ ...report, bytes: 15 }]],
      ['a digest not stored', [{ ...report, digest: other.digest }]],
      ['one path twice', [report, report]],
    ];
    for (const [why, artifacts] of wrongClaims) {
      const refused = await complete(r, l, artifacts);
      expect(refused.status, why).toBe(409);
      expect(refused.body.code, why).toBe('attestation_mismatch');
      expect((await runOf(l.runId)).status, why).toBe('running');
    }
    const done = await complete(r, l, [report]);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await runOf(l.runId)).outputs.artifacts).toEqual([report]);
  });

  it("another attempt's upload is not this attempt's", async () => {
    const a = await pairTestRunner(t.app, { name: 'first', capabilities: COMMAND_CAPS });
    const first = await leasedRun(a);
    const early = await upload(a, first, 'early.txt', 'from attempt 1');
    expect((await call(t.app, 'POST', `/runners/${a.id}/revoke`, { key: ADMIN_KEY })).status).toBe(200);
    const b = await pairTestRunner(t.app, { name: 'second', capabilities: COMMAND_CAPS });
    const [second] = await leaseRuns(t.app, b, 1);
    expect(second?.runId).toBe(first.runId);
    const refused = await complete(b, second!, [early]);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('attestation_mismatch');
    expect(refused.body.detail).toContain('early.txt was not stored for epoch 2');
  });

  it('an upload past EVERDICT_ARTIFACT_MAX_BYTES is 413 artifact_too_large: nothing stored, staged or listed', async () => {
    const r = await pairTestRunner(t.app, { name: 'bounded', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const before = await storedObjects();
    // Streamed without a declared length, in pieces: the bound is counted as the bytes arrive (64 KiB here).
    const piece = new Uint8Array(16 * 1024).fill(7);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent++ < 8) c.enqueue(piece);
        else c.close();
      },
    });
    const res = await t.app.request(`/runner/v1/runs/${l.runId}/artifacts?epoch=${l.epoch}&path=big.bin`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${r.credential}`, 'content-type': 'application/octet-stream' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: 'artifact_too_large', details: { maxBytes: 65_536 } });
    expect(await storedObjects()).toEqual(before);
    // At the bound exactly it is stored, and the run completes claiming it.
    const at = await upload(r, l, 'fits.bin', 'x'.repeat(65_536));
    expect(at.bytes).toBe(65_536);
    const done = await complete(r, l, [at]);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
  });
});

describe('an upload whose bytes cannot be moved to their address', () => {
  it('answers 503 and leaves nothing listed or staged: the runner may complete without it', async () => {
    const r = await pairTestRunner(t.app, { name: 'unplaced', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const backend = t.core.trajectories!.store.backend;
    // A file where the address's shard directory must go (content whose shard no other artifact here uses):
    // the move fails after the listing has committed.
    let content = '';
    let shard = '';
    do {
      content = `unplaceable ${Math.random()}`;
      shard = `artifacts/blake3/${bytesToHex(blake3(new TextEncoder().encode(content))).slice(0, 2)}`;
    } while ((await storedObjects()).some((p) => p.startsWith(`${shard}/`)));
    await backend.put({ tenant: 'default', path: shard }, new TextEncoder().encode('in the way'));
    const before = await storedObjects();
    const res = await t.app.request(`/runner/v1/runs/${l.runId}/artifacts?epoch=${l.epoch}&path=x.txt`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${r.credential}`, 'content-type': 'application/octet-stream' },
      body: content,
    });
    expect(res.status).toBe(503);
    expect(await storedObjects()).toEqual(before);
    const listed = await t.core.internals.deps.db
      .selectFrom('runner_artifacts')
      .select('path')
      .where('run_id', '=', l.runId)
      .execute();
    expect(listed).toEqual([]);
    await backend.delete({ tenant: 'default', path: shard });
    expect((await complete(r, l, [])).status).toBe(200);
  });
});

describe('GET /runs/:id/artifact', () => {
  it('serves the bytes a run lists, with their address; not what it does not list, nor to another tenant', async () => {
    const r = await pairTestRunner(t.app, { name: 'download', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const report = await upload(r, l, 'reports/day 1.txt', 'line one\nline two\n');
    await upload(r, l, 'unlisted.txt', 'uploaded, never listed');
    // A name the listing lookup (a JSON path query with the name as its variable) must take as it is.
    const odd = await upload(r, l, 'odd "name" $p @ ?.txt', 'odd');
    expect((await complete(r, l, [report, odd])).status).toBe(200);
    expect(await (await download(l.runId, 'odd "name" $p @ ?.txt')).text()).toBe('odd');

    const res = await download(l.runId, 'reports/day 1.txt');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('line one\nline two\n');
    expect(res.headers.get('etag')).toBe(`"${report.digest}"`);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-length')).toBe('18');
    expect(res.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''day%201.txt");

    for (const path of ['unlisted.txt', 'missing.txt']) {
      const none = await download(l.runId, path);
      expect(none.status, path).toBe(404);
      expect(((await none.json()) as { code: string }).code).toBe('not_found');
    }
    const theirs = await t.tenant('artifact-other');
    expect((await download(l.runId, 'reports/day 1.txt', theirs)).status).toBe(404);
    expect((await download('run_missing', 'x')).status).toBe(404);
    const noPath = await t.app.request(`/runs/${l.runId}/artifact`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(noPath.status).toBe(400);
  });

  it('over a real node server, altered bytes cut their own answer short, and the next request is answered', async () => {
    const r = await pairTestRunner(t.app, { name: 'tamper-http', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const a = await upload(r, l, 'small.json', '{"answer":42}');
    expect((await complete(r, l, [a])).status).toBe(200);
    await alter(a.digest, '{"answer":43}');
    const server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const get = (p: string) => fetch(`${base}${p}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      // Cut short, whichever way the adapter ends it (a 200 whose body breaks off, or a 500 before any byte):
      // never the altered bytes whole.
      const cut = await get(`/runs/${l.runId}/artifact?path=small.json`)
        .then(async (res) => (res.status === 200 ? await res.text() : `status ${res.status}`))
        .catch((e: Error) => `failed: ${e.message}`);
      expect(cut).not.toBe('{"answer":43}');
      // The next request (on a kept-alive connection, if the client reuses one) is answered: before, the whole
      // altered body went out and the failure then cut the connection the client reused next ("fetch failed").
      expect((await get('/healthz')).status).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise((res) => server.close(res));
    }
  });

  it('bytes altered in the store do not arrive whole: the body fails before its last piece', async () => {
    const r = await pairTestRunner(t.app, { name: 'tamper', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const a = await upload(r, l, 'result.json', '{"answer":42}');
    expect((await complete(r, l, [a])).status).toBe(200);
    await alter(a.digest, '{"answer":43}');
    const res = await download(l.runId, 'result.json');
    expect(res.status).toBe(200); // the headers went before the bytes could be checked …
    await expect(res.text()).rejects.toThrow(); // … and the body never completes
  });
});

describe('GET /runs/:id/artifacts.tar', () => {
  const archive = (runId: string, key = ADMIN_KEY) =>
    t.app.request(`/runs/${runId}/artifacts.tar`, { headers: { authorization: `Bearer ${key}` } });
  /** A command run whose attempt uploaded `files` and settled listing them: its lease and their claims. */
  const settledWith = async (name: string, files: [path: string, body: string][]) => {
    const r = await pairTestRunner(t.app, { name, capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const claims = [];
    for (const [path, body] of files) claims.push(await upload(r, l, path, body));
    expect((await complete(r, l, claims)).status).toBe(200);
    return { l, claims };
  };

  it('holds exactly the files the run lists, sorted, each its bytes; its length is announced', async () => {
    const r = await pairTestRunner(t.app, { name: 'archive', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    const long = `${'deep/'.repeat(30)}name with ünïcode.txt`; // past ustar's fields: a pax path record
    const listed = [
      await upload(r, l, 'b.txt', 'bee'),
      await upload(r, l, 'a/one.json', '{"one":1}'),
      await upload(r, l, long, 'long'),
      await upload(r, l, 'empty', ''),
    ];
    await upload(r, l, 'unlisted.txt', 'uploaded, never listed');
    expect((await complete(r, l, listed)).status).toBe(200);

    const res = await archive(l.runId);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-tar');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${l.runId}-artifacts.tar"`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(res.headers.get('content-length')).toBe(String(bytes.byteLength));
    const entries = await readTar(bytes);
    expect(entries.map((e) => e.path)).toEqual(['a/one.json', 'b.txt', long, 'empty']); // by UTF-8 bytes
    const text = (p: string) => {
      const e = entries.find((x) => x.path === p);
      return e?.type === 'file' ? new TextDecoder().decode(e.data) : undefined;
    };
    expect([text('a/one.json'), text('b.txt'), text(long), text('empty')]).toEqual([
      '{"one":1}',
      'bee',
      'long',
      '',
    ]);
    // The same listing, the same bytes.
    expect(new Uint8Array(await (await archive(l.runId)).arrayBuffer())).toEqual(bytes);

    const theirs = await t.tenant('archive-other');
    const hidden = await archive(l.runId, theirs);
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as { code: string }).code).toBe('not_found');
    expect((await archive('run_missing')).status).toBe(404);
  });

  it('a run that lists no artifacts answers the empty archive', async () => {
    const { l } = await settledWith('archive-none', []);
    const res = await archive(l.runId);
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array(1024));
  });

  it('a listed file the store no longer holds is 404 before any byte', async () => {
    const { l } = await settledWith('archive-gone', [
      ['kept.txt', 'kept'],
      ['gone.txt', 'gone'],
    ]);
    await t.core.internals.deps.db
      .deleteFrom('runner_artifacts')
      .where('run_id', '=', l.runId)
      .where('path', '=', 'gone.txt')
      .execute();
    const res = await archive(l.runId);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      code: 'not_found',
      detail: expect.stringContaining('gone.txt'),
    });
  });

  it('paths are uploaded only in the form an archive holds; a listing from before that is 409, not a 500', async () => {
    const r = await pairTestRunner(t.app, { name: 'archive-paths', capabilities: COMMAND_CAPS });
    const l = await leasedRun(r);
    for (const path of ['a//b.txt', './a.txt', 'a/', 'a/./b', 'nul\0.txt', '../up', '/abs']) {
      const res = await t.app.request(
        `/runner/v1/runs/${l.runId}/artifacts?epoch=${l.epoch}&path=${encodeURIComponent(path)}`,
        {
          method: 'PUT',
          headers: { authorization: `Bearer ${r.credential}`, 'content-type': 'application/octet-stream' },
          body: 'x',
        },
      );
      expect(res.status, path).toBe(400);
    }
    // A listing stored before uploads were held to that form (written here as it was then).
    const claim = await upload(r, l, 'd/b.txt', 'bee');
    expect((await complete(r, l, [claim])).status).toBe(200);
    const db = t.core.internals.deps.db;
    await db
      .updateTable('runner_artifacts')
      .set({ path: 'd//b.txt' })
      .where('run_id', '=', l.runId)
      .execute();
    await sql`UPDATE runs SET outputs = jsonb_set(outputs, '{artifacts,0,name}', '"d//b.txt"') WHERE id = ${l.runId}`.execute(
      db,
    );
    const res = await archive(l.runId);
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({
      code: 'conflict',
      detail: expect.stringContaining('fetch it alone'),
    });
    expect(await (await download(l.runId, 'd//b.txt')).text()).toBe('bee');
  });

  it('over a real node server, altered bytes end the archive before its end, and the next request is answered', async () => {
    const { l, claims } = await settledWith('archive-tamper', [
      ['a.json', '{"answer":42}'],
      ['z.json', '{"later":1}'],
    ]);
    await alter(claims[0]!.digest, '{"answer":43}');
    const server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const get = (p: string) => fetch(`${base}${p}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      const got = await get(`/runs/${l.runId}/artifacts.tar`)
        .then(async (res) =>
          res.status === 200 ? Buffer.from(await res.arrayBuffer()) : `status ${res.status}`,
        )
        .catch((e: Error) => `failed: ${e.message}`);
      expect(typeof got === 'string' ? got : got.toString('latin1')).not.toContain('{"answer":43}');
      expect(typeof got).toBe('string'); // never a complete body
      expect((await get('/healthz')).status).toBe(200);
    } finally {
      server.closeAllConnections();
      await new Promise((res) => server.close(res));
    }
  });
});
