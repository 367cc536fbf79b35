// Server-side prepared statements for the hot statements, on PostgreSQL. The claim, settle and create
// statements are large CTEs whose planning costs more than their execution (claim: ≈ 4 ms to plan, ≈ 2 ms
// to run at 2,000 queued). A statement whose SQL text starts with `/* prepared:<name> */` is sent as a named
// statement: each pooled connection parses and plans it once, PostgreSQL keeps the plan (custom for the
// first five executions, then the generic one when it is no worse), and replans it by itself when a table
// it reads is ANALYZEd or altered. Every other query is sent exactly as kysely compiled it. PGlite has no
// pool to speak of; there the marker is an ordinary comment.
import type pg from 'pg';

const MARKER = /^\/\* prepared:([a-z0-9_]+) \*\//;
const OPENER = '/* prepared:';

/** `sql` prefix that opts a statement in (its text must be the same for every call: parameters only). */
export const prepared = (name: string): string => `/* prepared:${name} */`;

/** 32-bit FNV-1a of the text: a different text (e.g. another number of kinds) gets another statement name. */
function fnv(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

type QueryFn = (...args: unknown[]) => unknown;

/** The named statement a marked text is sent as (`<marker>_<hash>`), or null for an unmarked text. */
export function statementName(text: string): string | null {
  const m = MARKER.exec(text);
  return m ? `${m[1]}_${fnv(text)}` : null;
}

/**
 * Route marked statements of this client through named statements (called once per new connection);
 * `onMarked` hears each marked statement run (its text and parameters: warm-pool.ts).
 */
export function prepareMarkedStatements(
  client: pg.PoolClient,
  onMarked?: (text: string, values: readonly unknown[] | undefined) => void,
): void {
  const names = new Map<string, string>();
  const plain = client.query.bind(client) as QueryFn;
  const routed: QueryFn = (text, values, callback) => {
    // Unmarked texts (most, and long ones) skip the lookup: a Map key hashes the whole text each call.
    if (typeof text === 'string' && text.startsWith(OPENER)) {
      let name = names.get(text);
      if (name === undefined) {
        name = statementName(text) ?? '';
        names.set(text, name);
      }
      if (name !== '') {
        onMarked?.(text, Array.isArray(values) ? values : undefined);
        return plain({ name, text, values }, callback);
      }
    }
    return plain(text, values, callback);
  };
  (client as unknown as { query: QueryFn }).query = routed;
}
