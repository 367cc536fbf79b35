// What PostgreSQL cannot store must never reach it: U+0000 (text and jsonb refuse it), lone UTF-16 surrogates
// (jsonb refuses `\ud800`), and JSON nested past MAX_JSON_DEPTH (a recursive walk of it can overflow the
// stack). The HTTP edge refuses these before parsing (src/http/json-guard.ts); the services are entered by
// other doors too — the agent bridge's transport, subscription run specs replayed by the consumer, tools and
// tests — so every service method refuses them as well, with the same codes: 400 `nul_character`,
// `invalid_unicode`, `too_deep`. The walk is iterative: no input depth can overflow it.
import { ControlPlaneError } from '../errors.js';
import type { ControlPlaneServices } from './api.js';

/** The deepest JSON nesting accepted anywhere (containers inside containers). */
export const MAX_JSON_DEPTH = 128;

export interface Unstorable {
  readonly code: 'nul_character' | 'invalid_unicode' | 'too_deep';
  /** The dotted path of the offending string, key or container. */
  readonly path: string;
}

/** With the `u` flag a surrogate only matches unpaired: a pair is one code point. */
const LONE_SURROGATE = /\p{Surrogate}/u;

function badString(s: string): Unstorable['code'] | null {
  if (s.includes('\u0000')) return 'nul_character';
  if (LONE_SURROGATE.test(s)) return 'invalid_unicode';
  return null;
}

/** The first thing in `value` PostgreSQL could not store, or null. Iterative; shared objects are walked once. */
export function unstorable(value: unknown): Unstorable | null {
  const stack: [unknown, string, number][] = [[value, '', 1]];
  const seen = new WeakSet<object>();
  while (stack.length > 0) {
    const [v, at, depth] = stack.pop()!;
    if (typeof v === 'string') {
      const code = badString(v);
      if (code) return { code, path: at || '(value)' };
      continue;
    }
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (depth > MAX_JSON_DEPTH) return { code: 'too_deep', path: at || '(value)' };
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, child] = entries[i]!;
      const here = at ? `${at}.${k}` : k;
      const code = badString(k);
      if (code) return { code, path: here };
      stack.push([child, here, depth + 1]);
    }
  }
  return null;
}

const MESSAGES: Readonly<Record<Unstorable['code'], string>> = {
  nul_character: 'a string contains U+0000',
  invalid_unicode: 'a string contains a lone UTF-16 surrogate',
  too_deep: `JSON nests deeper than ${MAX_JSON_DEPTH} levels`,
};

/** Throws the 400 for the first thing in `value` PostgreSQL could not store. */
export function refuseUnstorable(value: unknown, where: string): void {
  const bad = unstorable(value);
  if (bad) {
    throw new ControlPlaneError(bad.code, `${where}: ${MESSAGES[bad.code]} (at ${bad.path})`, {
      path: bad.path,
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
          for (const arg of args) refuseUnstorable(arg, method);
        } catch (e) {
          return Promise.reject(e);
        }
        return Reflect.apply(member, target, args);
      };
    },
  });
}

/** Every service method refuses unstorable input in any argument before touching the ledger. */
export function withStorableGuard(services: ControlPlaneServices): ControlPlaneServices {
  return {
    auth: guarded(services.auth, 'auth'),
    runs: guarded(services.runs, 'runs'),
    events: guarded(services.events, 'events'),
    groups: guarded(services.groups, 'groups'),
    subscriptions: guarded(services.subscriptions, 'subscriptions'),
    agentBridge: guarded(services.agentBridge, 'agentBridge'),
    // Runner routes take streams and signals; their JSON bodies are guarded at the edge (json-guard).
    ...(services.runners ? { runners: services.runners } : {}),
    ...(services.sessions ? { sessions: guarded(services.sessions, 'sessions') } : {}),
    ...(services.agents ? { agents: guarded(services.agents, 'agents') } : {}),
  };
}
