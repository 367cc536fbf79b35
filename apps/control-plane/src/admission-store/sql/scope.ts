// One atomic step: its own transaction on a database, or a savepoint inside the caller's transaction
// (so the ledger can admit a run and insert its row in ONE transaction).
import { sql } from 'kysely';
import { type Executor, type Tx, withTx } from '../../db/tx.js';

/** Thrown inside a step to roll it back and report `raced` (a guard no longer held). */
export class StepAborted<T> extends Error {
  constructor(readonly result: T) {
    super('admission step aborted');
  }
}

let savepoints = 0;

export async function atomically<T>(exec: Executor, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (!exec.isTransaction) {
    try {
      return await withTx(exec as Exclude<Executor, Tx>, fn);
    } catch (e) {
      if (e instanceof StepAborted) return e.result as T;
      throw e;
    }
  }
  const tx = exec as Tx;
  const name = sql.raw(`adm_sp_${++savepoints}`);
  await sql`SAVEPOINT ${name}`.execute(tx);
  try {
    const out = await fn(tx);
    await sql`RELEASE SAVEPOINT ${name}`.execute(tx);
    return out;
  } catch (e) {
    await sql`ROLLBACK TO SAVEPOINT ${name}`.execute(tx);
    if (e instanceof StepAborted) return e.result as T;
    throw e;
  }
}

export function abort<T>(result: T): never {
  throw new StepAborted(result);
}
