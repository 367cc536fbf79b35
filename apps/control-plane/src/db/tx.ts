// Transactions with a bounded retry on deadlock / serialization failure (two replicas on one database).
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
/** Anything a repository can run on: the database or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

const RETRYABLE = new Set(['40001', '40P01']);

function pgCode(e: unknown): string | undefined {
  if (typeof e === 'object' && e !== null && 'code' in e) {
    const c = (e as { code: unknown }).code;
    return typeof c === 'string' ? c : undefined;
  }
  return undefined;
}

/** A deadlock or serialization failure: the work can be retried as it was. */
export function isRetryable(e: unknown): boolean {
  const code = pgCode(e);
  return code !== undefined && RETRYABLE.has(code);
}

export function isUniqueViolation(e: unknown): boolean {
  return pgCode(e) === '23505';
}

export async function withTx<T>(db: Db, fn: (tx: Tx) => Promise<T>, attempts = 5): Promise<T> {
  return retryOnConflict(() => db.transaction().execute(fn), attempts);
}

/**
 * Run `fn` again (bounded, jittered backoff) while it fails with a deadlock or serialization failure. Only
 * for work that is safe to repeat whole: a transaction, or one autocommit statement (rolled back whole).
 */
export async function retryOnConflict<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts || !isRetryable(e)) throw e;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * i));
    }
  }
}
