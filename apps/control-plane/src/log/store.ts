// The head log's rows (migration 0016): pending leaves, sequenced leaves, write-once perfect nodes, signed
// tree heads and cosignatures. Hashes cross the SQL boundary as lowercase hex (`encode`/`decode`), so the
// same code runs on pg (Buffer) and PGlite (Uint8Array); bigints are read through `Number` (sizes stay
// below 2^53). Every read that answers a proof is one batch.
import {
  bytesToHex,
  type Cosignature,
  type Hex,
  leafHash,
  type NodeId,
  nodeHash,
  parseHash,
  type SignedTreeHead,
  type StoredNode,
} from '@everdict/headlog';
import { sql } from 'kysely';
import { json } from '../db/numeric.js';
import { prepared } from '../db/prepared.js';
import type { Executor } from '../db/tx.js';

/** The advisory lock one sequencer holds (per transaction) across every replica of one database. */
export const SEQUENCER_LOCK = 0x6865_6164_6c6f_67n; // "headlog"

export interface PendingLeaf {
  id: string;
  tenantId: string;
  runId: string;
  groupId: string | null;
  length: number;
  head: Hex;
}

export interface SequencedLeaf {
  index: number;
  leaf: Uint8Array;
  tenantId: string;
  runId: string;
  groupId: string | null;
  length: number;
}

const num = (v: unknown): number => Number(v);
const hexBytes = (h: string): Uint8Array => parseHash(h) ?? Uint8Array.from(Buffer.from(h, 'hex'));

/** The number of sequenced leaves (the tree's size). */
export async function treeSize(ex: Executor): Promise<number> {
  const { rows } = await sql<{ n: unknown }>`SELECT coalesce(max(idx) + 1, 0) AS n FROM log_leaves`.execute(
    ex,
  );
  return num(rows[0]?.n ?? 0);
}

/** Takes the sequencer's lock for this transaction, or says another replica holds it. */
export async function tryLockSequencer(ex: Executor): Promise<boolean> {
  const { rows } = await sql<{
    ok: boolean;
  }>`SELECT pg_try_advisory_xact_lock(${String(SEQUENCER_LOCK)}::bigint) AS ok`.execute(ex);
  return rows[0]?.ok === true;
}

/** The oldest pending leaves (commit order, approximated by their sequence within what is visible). */
/** Whether any leaf waits to be sequenced (one index probe, no transaction: the idle loop's check). */
export async function anyPending(ex: Executor): Promise<boolean> {
  const { rows } = await sql<{ one: number }>`SELECT 1 AS one FROM log_pending LIMIT 1`.execute(ex);
  return rows.length > 0;
}

/**
 * The oldest pending leaves: the pending rows (one per inserting statement, migration 0024) in id order,
 * each expanded in its array order, until at least `limit` leaves (a row is never split). `id` is the row's.
 */
export async function pendingLeaves(ex: Executor, limit: number): Promise<PendingLeaf[]> {
  const { rows } = await sql<{
    id: unknown;
    tenant_id: string;
    run_id: string;
    group_id: string | null;
    length: unknown;
    head: string;
  }>`SELECT p.id, x.e->>'t' AS tenant_id, x.e->>'r' AS run_id, x.e->>'g' AS group_id,
       (x.e->>'l')::int AS length, x.e->>'h' AS head
     FROM (SELECT id, leaves,
                  sum(jsonb_array_length(leaves)) OVER (ORDER BY id) - jsonb_array_length(leaves) AS before
           FROM (SELECT id, leaves FROM log_pending ORDER BY id LIMIT ${limit}) l) p,
          jsonb_array_elements(p.leaves) WITH ORDINALITY AS x(e, ord)
     WHERE p.before < ${limit}
     ORDER BY p.id, x.ord`.execute(ex);
  return rows.map((r) => ({
    id: String(r.id),
    tenantId: r.tenant_id,
    runId: r.run_id,
    groupId: r.group_id,
    length: num(r.length),
    head: r.head,
  }));
}

/** Nodes below this level are computed from their leaves, not stored (`writePass`, `readNodes`). */
const STORED_FROM_LEVEL = 2;

/** What a sequencing pass reads after taking the lock: the tree's size, the newest STH, the pending leaves. */
export interface PassRead {
  size: number;
  last: SignedTreeHead | undefined;
  pending: PendingLeaf[];
}

/**
 * A pass's reads in ONE statement (after `tryLockSequencer`, so its snapshot sees every pass committed before
 * the lock): the tree's size (`treeSize`), the newest signed tree head (`latestTreeHead`) and the oldest pending
 * leaves (`pendingLeaves`, the same rows in the same order) — one row per pending leaf, or one row without a
 * leaf when none is pending. A named prepared statement (db/prepared.ts): the same text for every pass.
 */
export async function readForPass(ex: Executor, limit: number): Promise<PassRead> {
  const { rows } = await sql<
    TreeHeadRowOrNull & {
      size: unknown;
      id: unknown;
      tenant_id: string | null;
      run_id: string | null;
      group_id: string | null;
      length: unknown;
      head: string | null;
    }
  >`${sql.raw(prepared('headlog_pass_read'))}
    SELECT s.n AS size, h.tree_size, h.root, h.timestamp_ms, h.log_id, h.signature,
      p.id, p.tenant_id, p.run_id, p.group_id, p.length, p.head
    FROM (SELECT coalesce(max(idx) + 1, 0) AS n FROM log_leaves) s
    LEFT JOIN LATERAL (SELECT * FROM log_tree_heads ORDER BY tree_size DESC LIMIT 1) h ON true
    LEFT JOIN LATERAL (
      SELECT p.id, x.ord, x.e->>'t' AS tenant_id, x.e->>'r' AS run_id, x.e->>'g' AS group_id,
        (x.e->>'l')::int AS length, x.e->>'h' AS head
      FROM (SELECT id, leaves,
                   sum(jsonb_array_length(leaves)) OVER (ORDER BY id) - jsonb_array_length(leaves) AS before
            FROM (SELECT id, leaves FROM log_pending ORDER BY id LIMIT ${limit}) l) p,
           jsonb_array_elements(p.leaves) WITH ORDINALITY AS x(e, ord)
      WHERE p.before < ${limit}) p ON true
    ORDER BY p.id, p.ord`.execute(ex);
  const first = rows[0];
  const pending: PendingLeaf[] = [];
  for (const r of rows) {
    if (r.id === null || r.id === undefined) continue;
    pending.push({
      id: String(r.id),
      tenantId: r.tenant_id as string,
      runId: r.run_id as string,
      groupId: r.group_id,
      length: num(r.length),
      head: r.head as string,
    });
  }
  return {
    size: num(first?.size ?? 0),
    last:
      first && first.tree_size !== null && first.tree_size !== undefined
        ? toTreeHead(first as TreeHeadRow)
        : undefined,
    pending,
  };
}

/**
 * A pass's writes in ONE statement: the sequenced leaves, the nodes they completed, their pending rows removed,
 * and the signed tree head when one is due (kept once per size) — four tables no other part of the statement
 * reads. A named prepared statement (db/prepared.ts: arrays are parameters). Level-0 and level-1 nodes are not
 * written: a level-0 node is the hash of its leaf, a level-1 node the node hash of its two leaves' hashes, both
 * computed from `log_leaves` (`readNodes`) — one `log_nodes` row and index entry fewer per two leaves (≈ 180 B
 * of WAL per run of two segments). Level-1 rows written before stay and are not read.
 */
export async function writePass(
  ex: Executor,
  pendingIds: readonly string[],
  leaves: readonly SequencedLeaf[],
  nodes: readonly StoredNode[],
  sth: SignedTreeHead | null,
): Promise<void> {
  const stored = nodes.filter((n) => n.level >= STORED_FROM_LEVEL);
  await sql`${sql.raw(prepared('headlog_pass_write'))}
    WITH lv AS (INSERT INTO log_leaves (idx, leaf, tenant_id, run_id, group_id, length)
        SELECT x.idx, decode(x.leaf, 'hex'), x.tenant_id, x.run_id, x.group_id, x.length
        FROM unnest(${leaves.map((l) => String(l.index))}::bigint[], ${leaves.map((l) => bytesToHex(l.leaf))}::text[],
          ${leaves.map((l) => l.tenantId)}::text[], ${leaves.map((l) => l.runId)}::text[],
          ${leaves.map((l) => l.groupId)}::text[], ${leaves.map((l) => l.length)}::int[])
          AS x(idx, leaf, tenant_id, run_id, group_id, length)),
      nd AS (INSERT INTO log_nodes (level, idx, hash)
        SELECT x.level, x.idx, decode(x.hash, 'hex')
        FROM unnest(${stored.map((n) => n.level)}::smallint[], ${stored.map((n) => String(n.index))}::bigint[],
          ${stored.map((n) => bytesToHex(n.hash))}::text[]) AS x(level, idx, hash)),
      dp AS (DELETE FROM log_pending WHERE id IN (SELECT unnest(${[...new Set(pendingIds)]}::bigint[]))),
      th AS (INSERT INTO log_tree_heads (tree_size, root, timestamp_ms, log_id, signature)
        SELECT ${sth ? String(sth.treeSize) : null}::bigint, ${sth?.root ?? null}::text,
          ${sth ? String(sth.timestampMs) : null}::bigint, ${sth?.logId ?? null}::text, ${sth?.signature ?? null}::text
        WHERE ${sth !== null}::boolean
        ON CONFLICT (tree_size) DO NOTHING)
    SELECT 1 AS done`.execute(ex);
}

/**
 * The hashes of the named nodes, in the order named; `undefined` for a node not stored. A level-0 node is the
 * hash of the leaf at its index, a level-1 node at index i the node hash of leaves 2i and 2i+1 (`log_leaves`;
 * undefined unless both exist); higher ones are `log_nodes` rows. One statement.
 */
export async function readNodes(ex: Executor, ids: readonly NodeId[]): Promise<(Uint8Array | undefined)[]> {
  if (ids.length === 0) return [];
  const leafIdx = new Set<number>();
  for (const i of ids) {
    if (i.level === 0) leafIdx.add(i.index);
    else if (i.level === 1) leafIdx.add(2 * i.index).add(2 * i.index + 1);
  }
  const stored = ids.filter((i) => i.level >= STORED_FROM_LEVEL);
  const { rows } = await sql<{ level: unknown; idx: unknown; hash: string | null; leaf: string | null }>`
    SELECT n.level, n.idx, encode(n.hash, 'hex') AS hash, NULL AS leaf FROM log_nodes n
    JOIN jsonb_to_recordset(${json(stored.map((i) => ({ level: i.level, idx: i.index })))}::jsonb)
      AS x(level smallint, idx bigint) ON n.level = x.level AND n.idx = x.idx
    UNION ALL
    SELECT 0, l.idx, NULL, encode(l.leaf, 'hex') FROM log_leaves l
    WHERE l.idx = ANY(${[...leafIdx].map(String)}::bigint[])`.execute(ex);
  const byId = new Map(
    rows.map((r) => [
      `${num(r.level)}:${num(r.idx)}`,
      r.leaf !== null ? leafHash(Uint8Array.from(Buffer.from(r.leaf, 'hex'))) : hexBytes(r.hash ?? ''),
    ]),
  );
  return ids.map((i) => {
    if (i.level !== 1) return byId.get(`${i.level}:${i.index}`);
    const left = byId.get(`0:${2 * i.index}`);
    const right = byId.get(`0:${2 * i.index + 1}`);
    return left && right ? nodeHash(left, right) : undefined;
  });
}

/** Leaf bytes by index (the named ones that exist). */
export async function readLeaf(ex: Executor, index: number): Promise<Uint8Array | undefined> {
  const { rows } = await sql<{ leaf: string }>`
    SELECT encode(leaf, 'hex') AS leaf FROM log_leaves WHERE idx = ${index}`.execute(ex);
  return rows[0] ? Uint8Array.from(Buffer.from(rows[0].leaf, 'hex')) : undefined;
}

/** A tenant's run's (or group's) leaves below `size`, in index order. */
export async function leavesOf(
  ex: Executor,
  by: { tenantId: string; runId: string } | { tenantId: string; groupId: string },
  size: number,
): Promise<{ index: number; leaf: Uint8Array }[]> {
  const where =
    'runId' in by
      ? sql`tenant_id = ${by.tenantId} AND run_id = ${by.runId}`
      : sql`tenant_id = ${by.tenantId} AND group_id = ${by.groupId}`;
  const { rows } = await sql<{ idx: unknown; leaf: string }>`
    SELECT idx, encode(leaf, 'hex') AS leaf FROM log_leaves WHERE ${where} AND idx < ${size}
    ORDER BY idx`.execute(ex);
  return rows.map((r) => ({ index: num(r.idx), leaf: Uint8Array.from(Buffer.from(r.leaf, 'hex')) }));
}

interface TreeHeadRow {
  tree_size: unknown;
  root: string;
  timestamp_ms: unknown;
  log_id: string;
  signature: string;
}
/** A tree head's columns from an outer join (all null when there is none). */
type TreeHeadRowOrNull = { [K in keyof TreeHeadRow]: TreeHeadRow[K] | null };
const toTreeHead = (r: TreeHeadRow): SignedTreeHead => ({
  treeSize: num(r.tree_size),
  root: r.root,
  timestampMs: num(r.timestamp_ms),
  logId: r.log_id,
  signature: r.signature,
});

/** The newest STH (`cosigned`: the newest one holding at least one cosignature). */
export async function latestTreeHead(
  ex: Executor,
  opts: { cosigned?: boolean } = {},
): Promise<SignedTreeHead | undefined> {
  const { rows } = opts.cosigned
    ? await sql<TreeHeadRow>`SELECT h.* FROM log_tree_heads h
        WHERE EXISTS (SELECT 1 FROM log_cosignatures c WHERE c.tree_size = h.tree_size)
        ORDER BY h.tree_size DESC LIMIT 1`.execute(ex)
    : await sql<TreeHeadRow>`SELECT * FROM log_tree_heads ORDER BY tree_size DESC LIMIT 1`.execute(ex);
  return rows[0] ? toTreeHead(rows[0]) : undefined;
}

export async function treeHeadAt(ex: Executor, size: number): Promise<SignedTreeHead | undefined> {
  const { rows } = await sql<TreeHeadRow>`SELECT * FROM log_tree_heads WHERE tree_size = ${size}`.execute(ex);
  return rows[0] ? toTreeHead(rows[0]) : undefined;
}

export async function cosignaturesOf(ex: Executor, size: number): Promise<Cosignature[]> {
  const { rows } = await sql<{ witness: string; signature: string }>`
    SELECT witness, signature FROM log_cosignatures WHERE tree_size = ${size} ORDER BY created_at, witness`.execute(
    ex,
  );
  return rows.map((r) => ({ witness: r.witness, signature: r.signature }));
}

/** Keeps a cosignature once per witness; answers how many the STH now holds. */
export async function addCosignature(ex: Executor, size: number, c: Cosignature): Promise<number> {
  await sql`INSERT INTO log_cosignatures (tree_size, witness, signature) VALUES (${size}, ${c.witness}, ${c.signature})
    ON CONFLICT (tree_size, witness) DO NOTHING`.execute(ex);
  const { rows } = await sql<{ n: unknown }>`
    SELECT count(*) AS n FROM log_cosignatures WHERE tree_size = ${size}`.execute(ex);
  return num(rows[0]?.n ?? 0);
}
