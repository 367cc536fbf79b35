// pg returns int8/count as strings, PGlite as number or bigint. Every numeric result goes through here.

export type DbNumeric = string | number | bigint;

export function numeric(v: DbNumeric | null | undefined): number {
  if (v === null || v === undefined) return 0;
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n)) throw new TypeError(`not a number: ${String(v)}`);
  return n;
}

export function bigintOf(v: DbNumeric | null | undefined): bigint {
  if (v === null || v === undefined) return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  return BigInt(v);
}

/** A decimal string of an int8 (for cursors and ids that must not lose precision). */
export function decimal(v: DbNumeric): string {
  return typeof v === 'string' ? v : bigintOf(v).toString();
}

/** jsonb parameters are always passed as JSON text: pg would turn JS arrays into PG array literals. */
export function json(value: unknown): string {
  return JSON.stringify(value ?? null);
}

export function iso(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}
