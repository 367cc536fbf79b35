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

/** run-model's refusal (what JSON cannot hold) as this package's `bad_request`; anything else as it is. */
function storeError(e: unknown): unknown {
  return isRunModelError(e) ? new TrajectoryStoreError('bad_request', e.message) : e;
}

/** The canonical JSON text of `value`. */
export function canonicalJson(value: unknown): string {
  try {
    return jsonOf(value);
  } catch (e) {
    throw storeError(e);
  }
}

/** One canonical JSONL line (with its terminating newline): on every appended event's path, so no closure. */
export function canonicalLine(value: unknown): string {
  try {
    return lineOf(value);
  } catch (e) {
    throw storeError(e);
  }
}

/** The canonical JSONL of a sequence of values (the empty trajectory is zero bytes). */
export function canonicalJsonl(values: Iterable<unknown>): string {
  try {
    return jsonlOf(values);
  } catch (e) {
    throw storeError(e);
  }
}
