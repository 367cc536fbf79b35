// The Hono environment every route of this app shares: who is calling, and the request's logger.
import type { Logger } from '../observability/logger.js';
import type { Principal } from '../services/types.js';

export type { Principal, Role } from '../services/types.js';

export interface AppEnv {
  Variables: {
    /** Set by the auth middleware on every authenticated route; every query is scoped by its tenant. */
    principal: Principal;
    /**
     * Set with `principal` by the API-key middleware: watch the request's key for revocation (auth/revocation.ts).
     * Holds a closure over the key, never the key itself.
     */
    watchKey?: (onRevoked: () => void) => () => void;
    log: Logger;
    requestId: string;
    /** Set by the runner middleware on `/runner/v1/*`. */
    runner?: import('../runners/registry.js').RunnerIdentity;
  };
}
