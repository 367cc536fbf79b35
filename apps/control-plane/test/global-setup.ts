// vitest globalSetup: one migrated PGlite template for the whole run (see pglite-template.ts). Against a
// live PostgreSQL (EVERDICT_TEST_DATABASE_URL) every test makes its own database: nothing to prepare.
import { rmSync } from 'node:fs';
import { TEMPLATE_ENV, writeTemplate } from './pglite-template.js';

export default async function setup(): Promise<() => void> {
  if (process.env.EVERDICT_TEST_DATABASE_URL?.trim()) return () => {};
  const file = await writeTemplate();
  process.env[TEMPLATE_ENV] = file;
  return () => rmSync(file, { force: true });
}
