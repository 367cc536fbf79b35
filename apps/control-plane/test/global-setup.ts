// vitest globalSetup: one migrated PGlite template for the whole run (see pglite-template.ts). Against a
// live PostgreSQL (EVERDICT_TEST_DATABASE_URL) every test makes its own database as a clone of one migrated
// template database made here (test/db.ts), dropped at the end.
import { rmSync } from 'node:fs';
import { createLiveTemplate, PG_TEMPLATE_ENV } from './db.js';
import { TEMPLATE_ENV, writeTemplate } from './pglite-template.js';

export default async function setup(): Promise<() => Promise<void> | void> {
  if (process.env.EVERDICT_TEST_DATABASE_URL?.trim()) {
    const template = await createLiveTemplate();
    process.env[PG_TEMPLATE_ENV] = template.name;
    return () => template.drop();
  }
  const file = await writeTemplate();
  process.env[TEMPLATE_ENV] = file;
  return () => rmSync(file, { force: true });
}
