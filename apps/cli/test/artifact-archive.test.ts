// `artifact --dir` takes the run's archive in one request and trusts it for nothing: against a local server that
// answers the control plane's shapes (test/fake-server.ts) — the real core's archive is tested in the control
// plane (src/runners/artifacts.test.ts) and end to end by start.test.ts; what cannot be made to happen on the real
// core is an archive that disagrees with its run's listing, or a control plane from before the archive route.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { pack } from 'tar-stream';
import { afterEach, describe, expect, it } from 'vitest';
import { everdict } from './capture.js';
import { fakeServers, json, problem } from './fake-server.js';

const start = fakeServers();
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const scratch = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'everdict-archive-'));
  dirs.push(d);
  return d;
};

const files: Record<string, string> = { 'a.txt': 'alpha', 'sub/b.txt': 'beta' };
const listing = Object.entries(files).map(([name, text]) => ({
  name,
  uri: `artifact:blake3:${bytesToHex(blake3(new TextEncoder().encode(text)))}`,
  bytes: text.length,
}));
const run = { id: 'run_1', status: 'succeeded', outputs: { artifacts: listing } };

/** A tar of these entries, as tar-stream packs it. */
async function tarOf(entries: { name: string; body: string; type?: 'file' | 'symlink' }[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const c of p) chunks.push(c as Buffer);
  })();
  for (const e of entries)
    if (e.type === 'symlink') p.entry({ name: e.name, type: 'symlink', linkname: e.body }, '');
    else p.entry({ name: e.name, size: Buffer.byteLength(e.body) }, e.body);
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** A control plane whose archive is `archive` (or that has no archive route), serving single files too. */
const serving = (archive: Buffer | 'no route' | 'conflict') =>
  start((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/runs/run_1') return json(res, 200, run);
    if (url.pathname === '/runs/run_1/artifacts.tar') {
      if (archive === 'no route') return problem(res, 404, 'route_not_found');
      if (archive === 'conflict') return problem(res, 409, 'conflict');
      res.writeHead(200, {
        'content-type': 'application/x-tar',
        'content-length': String(archive.byteLength),
      });
      return res.end(archive);
    }
    const text =
      url.pathname === '/runs/run_1/artifact' ? files[url.searchParams.get('path') ?? ''] : undefined;
    if (text === undefined) return problem(res, 404, 'not_found');
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(text);
  });

const fetched = (dir: string) =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();

describe('artifact --dir through the run archive', () => {
  it('writes each listed file from one archive request, each verified', async () => {
    const { s, env } = await serving(
      await tarOf([
        { name: 'a.txt', body: 'alpha' },
        { name: 'sub/b.txt', body: 'beta' },
      ]),
    );
    const dir = scratch();
    const r = await everdict(['artifact', 'run_1', '--dir', dir], env);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^2 artifacts of run_1 in .*, each verified$/m);
    expect(readFileSync(path.join(dir, 'sub/b.txt'), 'utf8')).toBe('beta');
    expect(fetched(dir)).toEqual(['a.txt', 'sub/b.txt']);
    expect(s.of('GET /runs/run_1/artifacts.tar')).toHaveLength(1);
    expect(s.hits.filter((h) => h.path.startsWith('/runs/run_1/artifact?'))).toEqual([]);
  });

  for (const [why, answer] of [
    ['a control plane without the archive route', 'no route'],
    ['a run no archive holds (409: a listed path an archive cannot hold as it is)', 'conflict'],
  ] as const)
    it(`from ${why}, fetches each file alone`, async () => {
      const { s, env } = await serving(answer);
      const dir = scratch();
      const r = await everdict(['artifact', 'run_1', '--dir', dir], env);
      expect(r.code, r.err).toBe(0);
      expect(fetched(dir)).toEqual(['a.txt', 'sub/b.txt']);
      expect(s.hits.filter((h) => h.path.startsWith('/runs/run_1/artifact?'))).toHaveLength(2);
    });

  const refusals: [string, { name: string; body: string; type?: 'symlink' }[], RegExp, string[]][] = [
    [
      'bytes that hash to another address',
      [
        { name: 'a.txt', body: 'alpha' },
        { name: 'sub/b.txt', body: 'BETA' },
      ],
      /^not_verified: sub\/b\.txt: the bytes hash to blake3:/m,
      ['a.txt'],
    ],
    [
      'a file the run does not list',
      [
        { name: 'a.txt', body: 'alpha' },
        { name: 'extra.txt', body: 'x' },
      ],
      /^not_verified: the run's archive holds "extra\.txt", which the run does not list/m,
      ['a.txt'],
    ],
    [
      'a listed file twice',
      [
        { name: 'a.txt', body: 'alpha' },
        { name: 'a.txt', body: 'alpha' },
      ],
      /^not_verified: the run's archive holds "a\.txt", which the run does not list, or holds it twice/m,
      ['a.txt'],
    ],
    [
      'a link, not a file',
      [{ name: 'a.txt', body: '/etc/passwd', type: 'symlink' }],
      /^not_verified: the run's archive holds "a\.txt", a symlink/m,
      [],
    ],
    [
      'an archive that ends before every listed file came',
      [{ name: 'a.txt', body: 'alpha' }],
      /^not_verified: the run's archive ended with 1 of 2 files; "sub\/b\.txt" never came/m,
      ['a.txt'],
    ],
  ];
  for (const [why, entries, message, kept] of refusals)
    it(`refuses ${why}: exit 1, only verified files kept, nothing partial left`, async () => {
      const { env } = await serving(await tarOf(entries));
      const dir = scratch();
      const r = await everdict(['artifact', 'run_1', '--dir', dir], env);
      expect(r.code, r.err).toBe(1);
      expect(r.err).toMatch(message);
      expect(fetched(dir)).toEqual(kept);
    });

  it('an archive cut short is not_verified, and no partial file is left', async () => {
    const whole = await tarOf([
      { name: 'a.txt', body: 'alpha' },
      { name: 'sub/b.txt', body: 'beta' },
    ]);
    const { env } = await start((req, res) => {
      if (req.url === '/runs/run_1') return json(res, 200, run);
      res.writeHead(200, { 'content-type': 'application/x-tar', 'content-length': String(whole.byteLength) });
      res.write(whole.subarray(0, 512 + 512 + 512 + 2)); // a.txt whole, then two bytes of b.txt
      setImmediate(() => res.destroy());
    });
    const dir = scratch();
    const r = await everdict(['artifact', 'run_1', '--dir', dir], env);
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(/^not_verified: /m);
    expect(fetched(dir)).toEqual(['a.txt']);
    expect(existsSync(path.join(dir, 'sub', 'b.txt'))).toBe(false);
  });
});
