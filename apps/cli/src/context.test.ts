// Where a command's connection comes from: the running main job's file supplies a URL and its admin key, but
// that key is sent only to the main job itself. Before, `--url https://elsewhere` (or EVERDICT_URL) without a
// key sent this machine's admin key from `.everdict/main-job.json` to whatever server the URL named.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { everdict } from '../test/capture.js';
import { resolveConnection } from './context.js';
import { SECRETS_FILE } from './stack/secrets.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'everdict-context-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
writeFileSync(
  path.join(dataDir, SECRETS_FILE),
  JSON.stringify({
    apiKey: 'evd_local_admin_key_0123',
    internalToken: 'int_x',
    url: 'http://127.0.0.1:8787',
  }),
);
const env = { EVERDICT_DATA_DIR: dataDir };

describe('resolveConnection', () => {
  it('no flags: the main job URL and its key', () => {
    expect(resolveConnection({}, env)).toEqual({
      url: 'http://127.0.0.1:8787',
      key: 'evd_local_admin_key_0123',
    });
    // The URL `everdict start` prints (localhost) is the same main job.
    expect(resolveConnection({ url: 'http://localhost:8787/' }, env).key).toBe('evd_local_admin_key_0123');
  });

  it('another control plane (--url or EVERDICT_URL) never gets the main job key', () => {
    expect(resolveConnection({ url: 'https://everdict.example.com' }, env)).toEqual({
      url: 'https://everdict.example.com',
    });
    expect(resolveConnection({}, { ...env, EVERDICT_URL: 'http://10.0.0.7:8787' })).toEqual({
      url: 'http://10.0.0.7:8787',
    });
    // A key given for it is used as given.
    expect(resolveConnection({ url: 'https://everdict.example.com', key: 'evd_theirs' }, env).key).toBe(
      'evd_theirs',
    );
  });
});

describe('a URL that is not one', () => {
  it.each([
    [['--url', 'localhost:8787', 'runs'], {}, /usage: --url localhost:8787 is not an http/],
    [['--url', 'notaurl', 'runs'], {}, /usage: --url notaurl is not/],
    [
      ['runs'],
      { EVERDICT_URL: 'ftp://127.0.0.1:8787' },
      /usage: EVERDICT_URL ftp:\/\/127\.0\.0\.1:8787 is not/,
    ],
  ])('%j is a usage error (exit 2) before any call, not "unavailable"', async (args, extra, message) => {
    const r = await everdict(args, { ...env, ...extra });
    expect(r.err).toMatch(message);
    expect(r.err).not.toMatch(/unavailable|\n\s+at /);
    expect(r.code).toBe(2);
  });
});

describe("a call's signal", () => {
  it('is unlinked from Ctrl-C once the call is answered (no signal kept per call: nodejs/node#55351)', async () => {
    const { createServer } = await import('node:http');
    const { makeContext } = await import('./context.js');
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as import('node:net').AddressInfo;
    const interrupt = new AbortController();
    const seen: AbortSignal[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      if (init?.signal) seen.push(init.signal);
      return realFetch(input, init);
    }) as typeof fetch;
    try {
      const ctx = makeContext(
        { url: `http://127.0.0.1:${port}`, key: 'evd_x' },
        {
          stdout: process.stdout,
          stderr: process.stderr,
          stdin: process.stdin,
          env: {},
          signal: interrupt.signal,
        },
      );
      for (let i = 0; i < 20; i++) expect(await ctx.call('GET', '/healthz')).toEqual({ ok: true });
      expect(seen).toHaveLength(20);
      interrupt.abort();
      // Every call ended: Ctrl-C now reaches none of their signals (joined by AbortSignal.any, all 20 would abort).
      expect(seen.filter((s) => s.aborted)).toHaveLength(0);
    } finally {
      globalThis.fetch = realFetch;
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
