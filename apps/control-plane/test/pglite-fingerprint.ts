// The catalog fingerprint a recycled PGlite (pglite-recycle.ts) must match before it is handed on: one md5 per
// part of the catalog, so a rejection can name what a test changed (a column, a role, a sequence, statistics).
import type { PGlite, Transaction } from '@electric-sql/pglite';

export const USER_RELS = `SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'`;
const USER_NSP = `SELECT oid FROM pg_namespace WHERE nspname <> 'information_schema' AND nspname NOT LIKE 'pg\\_%'`;

/** Each part: a text that changes with any change of that part of the ledger's catalog. */
const PARTS: Record<string, string> = {
  relations: `SELECT string_agg(format('%s %s %s %s %s', c.oid::regclass, c.relkind, c.relnatts, c.relchecks,
     c.relhastriggers), ',' ORDER BY c.oid) FROM pg_class c WHERE c.oid IN (${USER_RELS})`,
  relstats: `SELECT string_agg(format('%s %s %s %s', c.oid::regclass, c.reltuples, c.relpages, c.relallvisible),
     ',' ORDER BY c.oid) FROM pg_class c WHERE c.oid IN (${USER_RELS})`,
  columns: `SELECT string_agg(format('%s %s %s %s %s %s', a.attrelid::regclass, a.attnum, a.attname, a.atttypid,
     a.attnotnull, a.attisdropped), ',' ORDER BY a.attrelid, a.attnum) FROM pg_attribute a
     WHERE a.attrelid IN (${USER_RELS}) AND a.attnum > 0`,
  defaults: `SELECT string_agg(pg_get_expr(d.adbin, d.adrelid), ',' ORDER BY d.adrelid, d.adnum) FROM pg_attrdef d
     WHERE d.adrelid IN (${USER_RELS})`,
  functions: `SELECT string_agg(md5(p.oid::regprocedure::text || p.prosrc || coalesce(p.proconfig::text, '')), ','
     ORDER BY p.oid) FROM pg_proc p WHERE p.pronamespace IN (${USER_NSP})`,
  triggers: `SELECT string_agg(format('%s %s %s %s', t.tgrelid::regclass, t.tgname, t.tgenabled, t.tgfoid), ','
     ORDER BY t.oid) FROM pg_trigger t`,
  constraints: `SELECT string_agg(format('%s %s %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid)),
     ',' ORDER BY k.oid) FROM pg_constraint k WHERE k.connamespace IN (${USER_NSP})`,
  indexes: `SELECT string_agg(format('%s %s', pg_get_indexdef(i.indexrelid), i.indisvalid), ',' ORDER BY i.indexrelid)
     FROM pg_index i WHERE i.indrelid IN (${USER_RELS})`,
  rules: `SELECT string_agg(pg_get_ruledef(r.oid), ',' ORDER BY r.oid) FROM pg_rewrite r
     WHERE r.ev_class IN (${USER_RELS})`,
  types: `SELECT string_agg(format('%s %s', y.oid, y.typname), ',' ORDER BY y.oid) FROM pg_type y
     WHERE y.typnamespace IN (${USER_NSP})`,
  enums: `SELECT string_agg(format('%s %s', e.enumtypid, e.enumlabel), ',' ORDER BY e.oid) FROM pg_enum e`,
  sequences: `SELECT string_agg(format('%s %s', s.schemaname || '.' || s.sequencename, s.last_value), ','
     ORDER BY s.schemaname, s.sequencename) FROM pg_sequences s`,
  statistics: `SELECT count(*) FROM pg_statistic WHERE starelid IN (${USER_RELS})`,
  roles: `SELECT string_agg(format('%s %s %s', r.rolname, r.rolsuper, r.rolconfig), ',' ORDER BY r.oid) FROM pg_roles r`,
  roleSettings: `SELECT string_agg(format('%s %s', s.setdatabase, s.setconfig), ',') FROM pg_db_role_setting s`,
  namespaces: `SELECT string_agg(nspname, ',' ORDER BY oid) FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_temp%'
     AND nspname NOT LIKE 'pg\\_toast\\_temp%'`,
  extensions: `SELECT string_agg(extname, ',' ORDER BY oid) FROM pg_extension`,
  largeObjects: `SELECT count(*) FROM pg_largeobject_metadata`,
  policies: `SELECT count(*) FROM pg_policy`,
};

const QUERY = `SELECT ${Object.entries(PARTS)
  .map(([name, sql]) => `md5(coalesce((${sql})::text, '')) AS "${name}"`)
  .join(',\n  ')}`;

export type Fingerprint = Record<string, string>;

export async function fingerprint(pg: PGlite | Transaction): Promise<Fingerprint> {
  const { rows } = await pg.query<Fingerprint>(QUERY);
  return rows[0] ?? {};
}

/** The parts in which `got` differs from `want` (empty: equal). */
export function fingerprintDiff(want: Fingerprint, got: Fingerprint): string[] {
  return Object.keys(PARTS).filter((k) => want[k] !== got[k]);
}
