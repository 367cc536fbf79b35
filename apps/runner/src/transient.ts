// Failures of a call to the control plane that refused nothing, and the pause before the same call again.
// The runner re-sends what such a call carried, byte for byte: the control plane takes a repeat as the
// original (a completion with the same epoch and attestation answers the settled run; an events batch with
// the same seqs and bytes is skipped by the trajectory store), so a retry never settles or appends twice.
import { isClientError } from '@everdict/client';

/** The pause before a call that failed transiently is made again: doubling from the first, up to the last. */
export const RETRY_MS = { first: 250, max: 2000 } as const;

/** The pause before the retry that follows `failures` transient failures in a row. */
export const retryDelayMs = (failures: number): number =>
  Math.min(RETRY_MS.max, RETRY_MS.first * 2 ** failures);

/**
 * A failure that says nothing was refused: the call got no answer (`network`), a 2xx answer that cannot be
 * read (`bad_response`), or the control plane could not serve it (5xx: nothing of it written). An unreadable
 * 4xx is a refusal all the same (its problem unread).
 */
export function isTransient(err: unknown): boolean {
  if (!isClientError(err)) return false;
  return err.code === 'network' || err.status >= 500 || (err.code === 'bad_response' && err.status < 300);
}
