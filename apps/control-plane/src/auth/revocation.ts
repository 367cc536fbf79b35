// What an API key holds open past its request — the SSE streams (`GET /runs/:id/events`, `/console/feed`,
// `GET /runs/:id/trajectory` tailing) — ends when the key is revoked, as its next request would be refused:
// at once on the revoking replica and on every replica that hears the revocation's NOTIFY, else within a
// re-check period (AuthService.watch). A stream tells its client why before it closes (`revokedEvent`).
import type { Context } from 'hono';
import type { AppEnv } from '../http/env.js';

export interface KeyRevocation {
  /** Aborts when the request's key stops authenticating. */
  readonly signal: AbortSignal;
  /** Stop watching (the stream ended on its own). */
  stop(): void;
}

/** Watch the request's API key; a request authenticated otherwise gets a signal that never aborts. */
export function watchRevocation(c: Context<AppEnv>): KeyRevocation {
  const abort = new AbortController();
  const watchKey = c.get('watchKey');
  const stop = watchKey ? watchKey(() => abort.abort()) : () => undefined;
  return { signal: abort.signal, stop };
}

/** The last SSE event of a stream whose key was revoked (the refusal its next request would get). */
export const revokedEvent = {
  event: 'error',
  data: JSON.stringify({ code: 'unauthorized', title: 'the API key was revoked' }),
} as const;
