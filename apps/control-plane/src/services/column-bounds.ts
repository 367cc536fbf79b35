// The ledger's real bounds: an input that lands in a column carries the column's range (400 out_of_range beyond).
/** PostgreSQL `integer`. */
export const INT4_MAX = 2_147_483_647;
/** PostgreSQL `bigint` (event positions). */
export const INT8_MAX = 9_223_372_036_854_775_807n;
