// One migrated PGlite data directory per test run. Making a PGlite (compiling the WebAssembly, initdb) and
// migrating it is the costliest step of a control-plane test file; cloning a live instance costs a dump and
// a second start. vitest's globalSetup (`test/global-setup.ts`) migrates one instance before any worker
// starts and writes its data directory to a file; every test database is a fresh PGlite loaded from it,
// instantiated from WebAssembly modules compiled once per worker (not once per database).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { openDatabase } from '../src/db/database.js';

/** The variable globalSetup sets to the template's path; test workers inherit it. */
export const TEMPLATE_ENV = 'EVERDICT_TEST_PGLITE_TEMPLATE';

/** Migrate a fresh PGlite and write its data directory (an uncompressed tar) to a new file. */
export async function writeTemplate(): Promise<string> {
  const pglite = new PGlite();
  const handle = await openDatabase({ pglite });
  const dump = await pglite.dumpDataDir('none');
  await handle.close();
  const file = join(tmpdir(), `everdict-pglite-template-${process.pid}-${Date.now()}.tar`);
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
  return file;
}

/**
 * A Blob whose `arrayBuffer()` hands out a copy of bytes held in memory. PGlite reads its data directory and
 * file bundle through `arrayBuffer()` on every start; Node's Blob streams its content out in small chunks
 * and joins them, which was ≈ a quarter of a PGlite start’s CPU (≈ 0.4 s of ≈ 1.6 s for the 43 MB template
 * and the bundle). A copy is one memcpy, and PGlite never sees another start's buffer.
 */
class BytesBlob extends Blob {
  readonly #bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    super([bytes]);
    this.#bytes = new Uint8Array(bytes); // a plain copy: a Buffer's slice() is a view, not a copy
  }
  override arrayBuffer(): Promise<ArrayBuffer> {
    return Promise.resolve(this.#bytes.slice().buffer);
  }
}

let template: Promise<Blob> | null = null;
/** The migrated data directory: globalSetup's file when there is one, else made once in this worker. */
export function templateDataDir(): Promise<Blob> {
  template ??= (async () => {
    const file = process.env[TEMPLATE_ENV];
    if (file) return new BytesBlob(readFileSync(file));
    const pglite = new PGlite();
    await openDatabase({ pglite }); // migrated; its Kysely handle is dropped without closing PGlite
    const dump = await pglite.dumpDataDir('none');
    await pglite.close();
    return new BytesBlob(new Uint8Array(await dump.arrayBuffer()));
  })();
  return template;
}

type WasmModule = NonNullable<PGliteOptions['pgliteWasmModule']>;
type Compiled = Pick<PGliteOptions, 'pgliteWasmModule' | 'initdbWasmModule' | 'fsBundle'>;
let compiled: Promise<Compiled> | null = null;
/** PGlite's WebAssembly modules and file bundle, compiled and read once in this worker. */
function compiledPglite(): Promise<Compiled> {
  compiled ??= (async () => {
    const dist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    // The global WebAssembly object (this package's TypeScript lib declares only its types).
    const wasm = (globalThis as unknown as { WebAssembly: { compile(b: Uint8Array): Promise<WasmModule> } })
      .WebAssembly;
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
      wasm.compile(readFileSync(join(dist, 'pglite.wasm'))),
      wasm.compile(readFileSync(join(dist, 'initdb.wasm'))),
    ]);
    return {
      pgliteWasmModule,
      initdbWasmModule,
      fsBundle: new BytesBlob(readFileSync(join(dist, 'pglite.data'))),
    };
  })();
  return compiled;
}

/** A fresh PGlite holding the migrated, empty ledger. */
export async function migratedPglite(): Promise<PGlite> {
  const [loadDataDir, modules] = await Promise.all([templateDataDir(), compiledPglite()]);
  return PGlite.create({ loadDataDir, ...modules });
}

/** Writes the migrated, empty ledger into `dir` (a built control plane's `<data dir>/pglite`), closed. */
export async function writeMigratedPgliteDir(dir: string): Promise<void> {
  mkdirSync(dirname(dir), { recursive: true });
  const [loadDataDir, modules] = await Promise.all([templateDataDir(), compiledPglite()]);
  const pglite = await PGlite.create({ dataDir: dir, loadDataDir, ...modules });
  await pglite.close();
}
