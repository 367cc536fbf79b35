// The alone-* tests (src/db/alone-polls, src/db/alone-sweeps, src/sessions/alone-reaper) space a core's fallback
// looks ALONE_POLL_MS apart and must see each loop act at its own fact or deadline instead. `beforeFallback`
// waits for that well before a fallback look could come, with room for a loaded machine (the control plane's
// files run two at a time on 2 cores): a loop that waited for its fallback fails it.
import { vi } from 'vitest';

export const ALONE_POLL_MS = 60_000;
const BEFORE_FALLBACK_MS = ALONE_POLL_MS / 2;

/** Until `check` holds, for at most half the fallback's period. */
export const beforeFallback = (check: () => Promise<void> | void) =>
  vi.waitFor(check, { timeout: BEFORE_FALLBACK_MS, interval: 25 });
