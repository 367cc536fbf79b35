// Test helpers: the real control plane (PGlite core, scheduler on, head log driven pass by pass) served over
// real HTTP, so the BUILT runrecord CLI and the witness read it exactly as they read any log; and the staged
// attacks a dishonest operator would make directly in its database.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  bytesToHex,
  CompactRange,
  decodeLeaf,
  encodeLeaf,
  generateKeyPair,
  type KeyPair,
  leafFor,
  leafHash,
  signTreeHead,
} from '@everdict/headlog';
import { serve } from '@hono/node-server';
import { sql } from 'kysely';
import { json } from '../../db/numeric.js';
import { call, type TestApp, testApp } from '../../http/testing/harness.js';
import type { HeadLog } from '../head-log.js';

export const RUNRECORD_CLI = fileURLToPath(
  new URL('../../../../../packages/runrecord/dist/cli.js', import.meta.url),
);

export interface ServedLog {
  t: TestApp;
  log: HeadLog;
  url: string;
  logKey: KeyPair;
  witness: KeyPair;
  close(): Promise<void>;
}

export async function servedLog(): Promise<ServedLog> {
  const logKey = generateKeyPair();
  const witness = generateKeyPair();
  const t = await testApp({
    scheduler: { enabled: true, pollMs: 25, inlineTimeoutMs: 600_000 },
    executors: [],
    headLog: { key: logKey, witnessKeys: [bytesToHex(witness.publicKey)], loop: false, sthIntervalMs: 0 },
  });
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }, () =>
      resolve(s as Server),
    ) as Server;
  });
  const { port } = server.address() as AddressInfo;
  return {
    t,
    log: t.core.headLog!,
    url: `http://127.0.0.1:${port}`,
    logKey,
    witness,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await t.close();
    },
  };
}

/** Waits for a run to settle (polling its status; no fixed sleep decides anything). */
export async function settled(t: TestApp, id: string): Promise<string> {
  for (let i = 0; ; i++) {
    const r = await call(t.app, 'GET', `/runs/${id}`);
    const s = String(r.body.status);
    if (s === 'succeeded' || s === 'failed' || s === 'cancelled') return s;
    if (i > 4_000) throw new Error(`run ${id} still ${s}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

export const ANALYSIS = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'logged' } } };

export async function finishedRun(t: TestApp): Promise<string> {
  const created = await call(t.app, 'POST', '/runs', { body: ANALYSIS });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  const id = (created.body.run as { id: string }).id;
  await settled(t, id);
  return id;
}

export async function finishedGroup(t: TestApp, n: number): Promise<{ id: string; runs: string[] }> {
  const g = await call(t.app, 'POST', '/groups', { body: { kind: 'experiment', spec: ANALYSIS, repeat: n } });
  if (g.status !== 201) throw new Error(JSON.stringify(g.body));
  const id = (g.body.group as { id: string }).id;
  const runs = (g.body.runs as { id: string }[]).map((r) => r.id);
  for (const r of runs) await settled(t, r);
  return { id, runs };
}

/** Sequences everything pending and signs a tree head over it. */
export async function sequenceAll(log: HeadLog): Promise<number> {
  for (;;) {
    const r = await log.pass({ forceSign: true });
    if (!r.more) return r.size;
  }
}

export const WITNESS_CLI = fileURLToPath(new URL('../../../../witness/dist/cli.js', import.meta.url));

/**
 * One round of the BUILT everdict-witness against the control plane (`--once`, the log key pinned, its state
 * in `stateFile`): exit 0 accepted/unchanged, 3 a fork. A new process each time: every round is a restart
 * from the state file.
 */
export function witnessOnce(
  s: ServedLog,
  stateFile: string,
): Promise<{ code: number | null; lines: Record<string, unknown>[] }> {
  const keyFile = `${stateFile}.key`;
  writeFileSync(keyFile, `${bytesToHex(s.witness.secretKey)}\n`, { mode: 0o600 });
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [
      WITNESS_CLI,
      '--log',
      `${s.url}=${bytesToHex(s.logKey.publicKey)}`,
      '--key-file',
      keyFile,
      '--state-file',
      stateFile,
      '--metrics-port',
      '0',
      '--metrics-host',
      '127.0.0.1',
      '--once',
    ]);
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    p.on('close', (code) => {
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, lines });
    });
  });
}

export interface CliResult {
  code: number | null;
  json: Record<string, unknown> | undefined;
  err: string;
}

/** Runs a command of the BUILT everdict-runrecord CLI. */
export function runrecord(args: string[], input: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [RUNRECORD_CLI, ...args]);
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      err += d;
    });
    p.on('close', (code) => {
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = JSON.parse(out);
      } catch {
        parsed = undefined;
      }
      resolve({ code, json: parsed, err });
    });
    p.stdin.end(input);
  });
}

// The attacks, staged the way a dishonest operator with database access (and the log key) would.

/**
 * Rebuilds the log's nodes from its (possibly edited) leaf rows and re-signs every kept tree head over the
 * new roots, dropping their cosignatures: a complete rewrite of history that no earlier reader saw.
 */
export async function rebuildAndResign(s: ServedLog): Promise<void> {
  const db = s.t.core.internals.ldb.db;
  const { rows } = await sql<{ idx: unknown; leaf: string }>`
    SELECT idx, encode(leaf, 'hex') AS leaf FROM log_leaves ORDER BY idx`.execute(db);
  const range = CompactRange.empty();
  const nodes: { level: number; idx: number; hash: string }[] = [];
  const roots = new Map<number, string>();
  for (const r of rows) {
    for (const n of range.append(leafHash(Uint8Array.from(Buffer.from(r.leaf, 'hex')))))
      nodes.push({ level: n.level, idx: n.index, hash: bytesToHex(n.hash) });
    roots.set(range.size, bytesToHex(range.root()));
  }
  await sql`DELETE FROM log_nodes`.execute(db);
  await sql`INSERT INTO log_nodes (level, idx, hash) SELECT x.level, x.idx, decode(x.hash, 'hex')
    FROM jsonb_to_recordset(${json(nodes)}::jsonb) AS x(level smallint, idx bigint, hash text)`.execute(db);
  await sql`DELETE FROM log_cosignatures`.execute(db);
  const { rows: heads } = await sql<{ tree_size: unknown; timestamp_ms: unknown }>`
    SELECT tree_size, timestamp_ms FROM log_tree_heads`.execute(db);
  await sql`DELETE FROM log_tree_heads`.execute(db);
  for (const h of heads) {
    const size = Number(h.tree_size);
    if (size > rows.length) continue;
    const sth = signTreeHead(
      {
        treeSize: size,
        root: roots.get(size) ?? bytesToHex(CompactRange.empty().root()),
        timestampMs: Number(h.timestamp_ms),
      },
      s.logKey,
    );
    await sql`INSERT INTO log_tree_heads (tree_size, root, timestamp_ms, log_id, signature)
      VALUES (${size}, ${sth.root}, ${sth.timestampMs}, ${sth.logId}, ${sth.signature})`.execute(db);
  }
  s.log.reload();
}

/** Rewrites the leaf at `index` in place (UPDATE): same run, another head. */
export async function rewriteLeaf(s: ServedLog, index: number, head: string): Promise<void> {
  const db = s.t.core.internals.ldb.db;
  const { rows } = await sql<{
    leaf: string;
  }>`SELECT encode(leaf, 'hex') AS leaf FROM log_leaves WHERE idx = ${index}`.execute(db);
  const old = decodeLeaf(Uint8Array.from(Buffer.from(rows[0]!.leaf, 'hex')));
  const edited = encodeLeaf({ ...old, head });
  await sql`UPDATE log_leaves SET leaf = decode(${bytesToHex(edited)}, 'hex') WHERE idx = ${index}`.execute(
    db,
  );
}

/** Removes a run's leaves and renumbers the rest: the log re-sequenced as if the run had never been logged. */
export async function dropRunFromLog(s: ServedLog, runId: string): Promise<void> {
  const db = s.t.core.internals.ldb.db;
  await sql`DELETE FROM log_leaves WHERE run_id = ${runId}`.execute(db);
  await sql`UPDATE log_leaves l SET idx = -1 - r.n FROM (
      SELECT idx, row_number() OVER (ORDER BY idx) - 1 AS n FROM log_leaves) r WHERE l.idx = r.idx`.execute(
    db,
  );
  await sql`UPDATE log_leaves SET idx = -1 - idx`.execute(db);
  await rebuildAndResign(s);
}

/** Drops every leaf from `size` on (and their nodes and tree heads): the log shown to a later audience. */
export async function truncateLog(s: ServedLog, size: number): Promise<void> {
  const db = s.t.core.internals.ldb.db;
  await sql`DELETE FROM log_leaves WHERE idx >= ${size}`.execute(db);
  await sql`DELETE FROM log_cosignatures WHERE tree_size > ${size}`.execute(db);
  await sql`DELETE FROM log_tree_heads WHERE tree_size > ${size}`.execute(db);
  await rebuildAndResign(s);
}

export { leafFor };
