// The same contract the in-memory store passes, on PGlite (default) or the live PostgreSQL (CI).
import { describeAdmissionStoreContract } from '@everdict/admission/contract';
import { afterAll } from 'vitest';
import { type TestDatabase, testDatabase } from '../../../test/db.js';
import { PgAdmissionStore } from './store.js';

const open: TestDatabase[] = [];
afterAll(async () => {
  await Promise.all(open.map((d) => d.dispose()));
});

describeAdmissionStoreContract(
  `PgAdmissionStore (${process.env.EVERDICT_TEST_DATABASE_URL ? 'postgres' : 'pglite'})`,
  async () => {
    const d = await testDatabase({ poolSize: 2 });
    open.push(d);
    return new PgAdmissionStore(d.db);
  },
);
