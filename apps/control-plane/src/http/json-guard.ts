// Bodies PostgreSQL cannot store, refused at the edge as the bad input they are (400 problem+json, nothing
// saved): NUL in the URL or anywhere in a JSON body (`nul_character`), a lone UTF-16 surrogate anywhere in a
// JSON body (`invalid_unicode`), a JSON body nested deeper than MAX_JSON_DEPTH (`too_deep`) — decided on the
// raw text by a linear scan, before anything parses or walks it recursively. The same rules guard every
// service door (services/storable-guard.ts); this is the edge's copy of the decision, not a second rule.
import { jsonNestingDepth } from '@everdict/trajectory-store';
import type { MiddlewareHandler } from 'hono';
import { MAX_JSON_DEPTH, unstorable } from '../services/storable-guard.js';
import type { AppEnv } from './env.js';
import { problem, sendProblem } from './problem.js';

/** Anything the JSON validator might parse (a superset of its media types). */
const JSON_LIKE = /json/i;

function decodedHasNul(raw: string): boolean {
  if (raw.includes('\u0000')) return true;
  try {
    return decodeURIComponent(raw).includes('\u0000');
  } catch {
    return /%00/i.test(raw);
  }
}

export function guardJsonBodies(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // The request line as sent (no URL object built per request): path and query, each decoded on its own.
    const href = c.req.url;
    const q = href.indexOf('?');
    if (decodedHasNul(q < 0 ? href : href.slice(0, q)) || (q >= 0 && decodedHasNul(href.slice(q)))) {
      return sendProblem(c, problem('nul_character', 'the URL contains a NUL character'));
    }
    const type = c.req.header('content-type');
    if (!type || !JSON_LIKE.test(type) || c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const text = await c.req.text(); // cached: the validator parses the same text
    if (jsonNestingDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
      return sendProblem(c, problem('too_deep', `JSON bodies may nest at most ${MAX_JSON_DEPTH} levels`));
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return next(); // malformed JSON: the validator answers 400 malformed_json
    }
    const bad = unstorable(body);
    if (bad) {
      const what = bad.code === 'nul_character' ? 'U+0000' : 'a lone UTF-16 surrogate';
      return sendProblem(
        c,
        problem(bad.code, `a string in the body contains ${what}`, { details: { path: bad.path } }),
      );
    }
    await next();
  };
}
