// One migrated PGlite data directory per test run. Making a PGlite (compiling the WebAssembly, initdb) and
// migrating it is the costliest step of a control-plane test file; cloning a live instance costs a dump and
// a second start. vitest's globalSetup (`test/global-setup.ts`) migrates one instance before any worker
// starts and writes its data directory to a file; every test database is a fresh PGlite loaded from it.
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
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

let template: Promise<Blob> | null = null;
/** The migrated data directory: globalSetup's file when there is one, else made once in this worker. */
export function templateDataDir(): Promise<Blob> {
  template ??= (async () => {
    const file = process.env[TEMPLATE_ENV];
    if (file) return new Blob([readFileSync(file)]);
    const pglite = new PGlite();
    await openDatabase({ pglite }); // migrated; its Kysely handle is dropped without closing PGlite
    const dump = await pglite.dumpDataDir('none');
    await pglite.close();
    return dump;
  })();
  return template;
}

/** A fresh PGlite holding the migrated, empty ledger. */
export async function migratedPglite(): Promise<PGlite> {
  return PGlite.create({ loadDataDir: await templateDataDir() });
}
