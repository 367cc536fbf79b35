// The package as another service gets it: `pnpm pack`, install the tarball into a scratch project outside the
// workspace (npm, real registry for its dependencies), import it, build and verify a record, run the bin.
// @everdict/headlog (the CLI's log commands) is packed beside it: npm resolves that dependency from its
// tarball, as it would from the registry once both are published.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const pkg = fileURLToPath(new URL('..', import.meta.url));
const headlog = fileURLToPath(new URL('../../headlog', import.meta.url));
let scratch = '';

beforeAll(() => {
  for (const dir of [pkg, headlog]) {
    if (!existsSync(join(dir, 'dist/index.js')))
      throw new Error(`${dir}/dist is missing: build the package (and its dependencies) before testing`);
  }
  scratch = mkdtempSync(join(tmpdir(), 'runrecord-pack-'));
  const packDir = join(scratch, 'tarball');
  for (const dir of [pkg, headlog]) {
    execFileSync('pnpm', ['pack', '--pack-destination', packDir], { cwd: dir, stdio: 'pipe' });
  }
  const tarballs = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
  if (tarballs.length !== 2) throw new Error(`pnpm pack produced ${tarballs.length} tarballs, not 2`);
  const app = join(scratch, 'app');
  cpSync(join(pkg, 'examples'), join(app, 'examples'), { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'scratch', private: true, type: 'module' }),
  );
  execFileSync(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--loglevel=error',
      ...tarballs.map((t) => join(packDir, t)),
    ],
    {
      cwd: app,
      stdio: 'pipe',
      timeout: 150_000,
    },
  );
}, 180_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('packed package', () => {
  it('ships dist, types, README and an exports map — no sources, tests or benches', () => {
    const files = readdirSync(join(scratch, 'app/node_modules/@everdict/runrecord'), { recursive: true }).map(
      String,
    );
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'dist/cli.js',
        'README.md',
        'package.json',
      ]),
    );
    expect(files.some((f) => f.startsWith('src') || f.startsWith('bench') || f.endsWith('.test.ts'))).toBe(
      false,
    );
  });

  it('imports and works outside the workspace (including the WebAssembly hash backend)', () => {
    const script = `
      import { openRecord, verifyWire, hashBackend } from '@everdict/runrecord';
      const a = (c) => c.repeat(64);
      const r = openRecord({ unitId: a('1'), grantsId: a('2') });
      r.execute({ attestation: a('3'), account: { dispatched: ['c1'], resolved: [] } });
      r.suspend({ snapshot: { transcript: a('4') }, manifest: a('5') });
      r.resume({ snapshot: { transcript: a('4') }, manifest: a('5'), idleUj: 7n, idleProvenance: 'estimated' });
      const v = verifyWire(JSON.parse(JSON.stringify(r.toWire())), { expectHead: r.head });
      console.log(JSON.stringify({ backend: hashBackend(), ok: v.ok, length: v.length, head: v.head === r.head }));
    `;
    writeFileSync(join(scratch, 'app/use.mjs'), script);
    const r = spawnSync(process.execPath, ['use.mjs'], { cwd: join(scratch, 'app'), encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ backend: 'hash-wasm', ok: true, length: 3, head: true });
  });

  it('runs the README example and the installed bin', () => {
    const app = join(scratch, 'app');
    const ex = spawnSync(process.execPath, ['examples/quickstart.mjs'], { cwd: app, encoding: 'utf8' });
    expect(ex.stdout).toContain('verified: true closed');
    const bin = join(app, 'node_modules/.bin/everdict-runrecord');
    const fixture = join(app, 'examples/record.json');
    const v = spawnSync(bin, ['verify'], { input: readFile(fixture), encoding: 'utf8' });
    expect(v.status).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ ok: true, length: 8, phase: 'closed' });
    const root = spawnSync(bin, ['log-root'], { input: '{"leaves":[]}', encoding: 'utf8' });
    expect([root.status, JSON.parse(root.stdout)]).toEqual([
      0,
      { tree_size: '0', root: 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262' },
    ]);
  });
});

function readFile(p: string): string {
  return execFileSync('cat', [p], { encoding: 'utf8' });
}
