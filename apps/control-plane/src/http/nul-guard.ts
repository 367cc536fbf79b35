// PostgreSQL text and jsonb cannot hold U+0000: a NUL anywhere in a path, a query or a JSON body would
// reach the ledger as a driver error (a 500). Refuse it at the edge as the bad input it is.
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.js';
import { problem, sendProblem } from './problem.js';

const JSON_TYPE = /^application\/([\w.-]+\+)?json\b/i;

function hasNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (depth > 64 || value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some((v) => hasNul(v, depth + 1));
  return Object.entries(value).some(([k, v]) => k.includes('\u0000') || hasNul(v, depth + 1));
}

function decodedHasNul(raw: string): boolean {
  if (raw.includes('\u0000')) return true;
  try {
    return decodeURIComponent(raw).includes('\u0000');
  } catch {
    return /%00/i.test(raw);
  }
}

export function rejectNul(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const url = new URL(c.req.url);
    if (decodedHasNul(url.pathname) || decodedHasNul(url.search)) {
      return sendProblem(c, problem(400, 'nul_character', 'the URL contains a NUL character'));
    }
    const type = c.req.header('content-type');
    if (type && JSON_TYPE.test(type) && c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      let body: unknown;
      try {
        body = await c.req.json(); // cached: the validator reads the same parse
      } catch {
        return next(); // malformed JSON: the validator answers 400 malformed_json
      }
      if (hasNul(body))
        return sendProblem(c, problem(400, 'nul_character', 'a string in the body contains U+0000'));
    }
    await next();
  };
}
