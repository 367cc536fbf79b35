// Column types shared by the ledger's table types (jsonb columns are written as JSON text: numeric.ts `json`).
import type { ColumnType } from 'kysely';
import type { DbNumeric } from './numeric.js';

export type Ts = ColumnType<Date, Date | string, Date | string>;
export type Jsonb<T> = ColumnType<T, string, string>;
export type Int8 = ColumnType<DbNumeric, DbNumeric, DbNumeric>;
export type GenInt8 = ColumnType<DbNumeric, DbNumeric | undefined, never>;
export type J = Record<string, unknown>;
