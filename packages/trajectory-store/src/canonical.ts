// Canonical JSON and canonical JSONL — the bytes a sealed trajectory's digest is computed over — are run-model's
// (`canonicalJson`: RFC 8785 for every JSON value; one encoding for every digest and address in Everdict).
// Here only the refusal is this package's: a value JSON cannot hold is `bad_request`.
import {
  isRunModelError,
  canonicalJsonl as jsonlOf,
  canonicalJson as jsonOf,
  canonicalLine as lineOf,
} from '@everdict/run-model';
import { TrajectoryStoreError } from './errors.js';

/** `encode()`, with run-model's refusal (what JSON cannot hold) as this package's `bad_request`. */
function asStoreError<T>(encode: () => T): T {
  try {
    return encode();
  } catch (e) {
    if (isRunModelError(e)) throw new TrajectoryStoreError('bad_request', e.message);
    throw e;
  }
}

/** The canonical JSON text of `value`. */
export const canonicalJson = (value: unknown): string => asStoreError(() => jsonOf(value));

/** One canonical JSONL line (with its terminating newline). */
export const canonicalLine = (value: unknown): string => asStoreError(() => lineOf(value));

/** The canonical JSONL of a sequence of values (the empty trajectory is zero bytes). */
export const canonicalJsonl = (values: Iterable<unknown>): string => asStoreError(() => jsonlOf(values));
