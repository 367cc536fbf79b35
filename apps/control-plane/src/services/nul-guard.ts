// PostgreSQL text and jsonb cannot hold U+0000: a NUL reaching the ledger is a driver error (a 500).
// The HTTP edge refuses it (src/http/nul-guard.ts), but the services are entered by other doors too —
// the agent bridge's transport, subscription run specs replayed by the consumer, tools and tests — so
// every service method refuses it as well, with the same stable code: 400 `nul_character`.
import { ControlPlaneError } from '../errors.js';
import type { ControlPlaneServices } from './api.js';

/** The dotted path of the first string (or key) holding U+0000, or null. */
export function nulPath(value: unknown, at = '', depth = 0): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? at || '(value)' : null;
  if (depth > 64 || value === null || typeof value !== 'object') return null;
  for (const [k, v] of Object.entries(value)) {
    const here = at ? `${at}.${k}` : k;
    if (k.includes('\u0000')) return here;
    const found = nulPath(v, here, depth + 1);
    if (found) return found;
  }
  return null;
}

/** Throws 400 `nul_character` when any string in `value` holds U+0000. */
export function refuseNul(value: unknown, where: string): void {
  const path = nulPath(value);
  if (path !== null) {
    throw new ControlPlaneError('nul_character', `${where}: a string contains U+0000 (at ${path})`, {
      path,
    });
  }
}

function guarded<T extends object>(service: T, name: string): T {
  return new Proxy(service, {
    get(target, prop, receiver) {
      const member: unknown = Reflect.get(target, prop, receiver);
      if (typeof member !== 'function') return member;
      const method = `${name}.${String(prop)}`;
      return (...args: unknown[]): unknown => {
        try {
          for (const arg of args) refuseNul(arg, method);
        } catch (e) {
          return Promise.reject(e);
        }
        return Reflect.apply(member, target, args);
      };
    },
  });
}

/** Every service method refuses NUL in any argument before touching the ledger. */
export function withNulGuard(services: ControlPlaneServices): ControlPlaneServices {
  return {
    auth: guarded(services.auth, 'auth'),
    runs: guarded(services.runs, 'runs'),
    events: guarded(services.events, 'events'),
    groups: guarded(services.groups, 'groups'),
    subscriptions: guarded(services.subscriptions, 'subscriptions'),
    agentBridge: guarded(services.agentBridge, 'agentBridge'),
  };
}
