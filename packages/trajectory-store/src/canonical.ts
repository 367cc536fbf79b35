// Canonical JSON and canonical JSONL — the bytes a sealed trajectory's digest is computed over — are run-model's
// (`canonicalJson`: RFC 8785 for every JSON value; one encoding for every digest and address in Everdict).
// Here only the refusal is this package's: a value JSON cannot hold is `bad_request`.
import { canonicalJson as canonicalOf, isRunModelError } from '@everdict/run-model';
import { TrajectoryStoreError } from './errors.js';

/** The canonical JSON text of `value`; TrajectoryStoreError `bad_request` for what JSON cannot hold. */
export function canonicalJson(value: unknown): string {
  try {
    return canonicalOf(value);
  } catch (e) {
    if (isRunModelError(e)) throw new TrajectoryStoreError('bad_request', e.message);
    throw e;
  }
}

/** One canonical JSONL line (with its terminating newline). */
export function canonicalLine(value: unknown): string {
  return `${canonicalJson(value)}\n`;
}

/** The canonical JSONL of a sequence of values (the empty trajectory is zero bytes). */
export function canonicalJsonl(values: Iterable<unknown>): string {
  let out = '';
  for (const v of values) out += canonicalLine(v);
  return out;
}
