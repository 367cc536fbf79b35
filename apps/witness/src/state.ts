// The witness's memory: per log, its pinned key and the last STH it accepted. Written atomically (a temp
// file in the same directory, fsynced, renamed over the old one, the directory fsynced — any of these failing
// is `StateUnwritable`) before the cosignature leaves, so a crash never leaves a witness that cosigned a
// tree it does not remember. A state file that exists but does not parse is refused (`CorruptState`):
// starting empty would re-accept any tree.
// A log is remembered under its normalized URL (`normalizeLogUrl`), so a config that spells it another way
// (`http://X:80/` for `http://x`) finds the same pinned key and accepted tree; entries of an older file that
// fold into one are merged only when they agree, else the file is refused (`CorruptState`).
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { treeHeadWire } from '@everdict/headlog';
import { z } from 'zod';
import { WitnessError } from './errors.js';

const logState = z.strictObject({
  /** The log's Ed25519 public key, hex: given in the configuration, or pinned on first contact. */
  log_key: z.string().regex(/^[0-9a-f]{64}$/),
  /** The last STH accepted (and cosigned), in the spec's JSON form; null before the first. */
  accepted: treeHeadWire.nullable(),
});
export type LogState = z.infer<typeof logState>;

export const witnessStateSchema = z.strictObject({
  format: z.literal('everdict.witness.state/1'),
  logs: z.record(z.string(), logState),
});
export type WitnessState = z.infer<typeof witnessStateSchema>;

/**
 * The one spelling of a log's URL the witness remembers it under: WHATWG-parsed (scheme and host lowercased,
 * a default port dropped), without trailing slashes, query or fragment — what `LogClient` resolves its routes
 * against is the same for every spelling. Not an http(s) URL: `BadConfig`.
 */
export function normalizeLogUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new WitnessError('BadConfig', `${url} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new WitnessError('BadConfig', `${url} is not an http(s) URL`);
  return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
}

const sameTree = (a: LogState['accepted'], b: LogState['accepted']) =>
  a !== null && b !== null && a.tree_size === b.tree_size && a.root === b.root;

/**
 * `logs` keyed by normalized URL. Two entries of one log merge only when they agree: the same pinned key, and
 * at most one accepted tree (or the same tree twice). Otherwise `CorruptState` — picking one would drop a
 * key or a tree this witness vouched for; which one extends the other cannot be proven without the log.
 */
export function foldLogs(logs: WitnessState['logs'], where: string): WitnessState['logs'] {
  const out: WitnessState['logs'] = {};
  const names: Record<string, string[]> = {};
  for (const [raw, entry] of Object.entries(logs)) {
    let url: string;
    try {
      url = normalizeLogUrl(raw);
    } catch {
      throw new WitnessError('CorruptState', `${where}: ${JSON.stringify(raw)} is not a log URL`);
    }
    const prev = out[url];
    const seen = [...(names[url] ?? []), raw];
    names[url] = seen;
    if (prev === undefined) {
      out[url] = entry;
      continue;
    }
    const both = `${seen.map((n) => JSON.stringify(n)).join(' and ')} are one log (${url})`;
    const fix = 'check the log by hand and keep one entry; the file was not changed';
    if (prev.log_key !== entry.log_key)
      throw new WitnessError(
        'CorruptState',
        `${where}: ${both} pinned to two keys (${prev.log_key}, ${entry.log_key}): ${fix}`,
      );
    if (prev.accepted !== null && entry.accepted !== null && !sameTree(prev.accepted, entry.accepted))
      throw new WitnessError(
        'CorruptState',
        `${where}: ${both} with two accepted trees (size ${prev.accepted.tree_size} root ${prev.accepted.root}, size ${entry.accepted.tree_size} root ${entry.accepted.root}) not proven to extend one another: ${fix}`,
      );
    out[url] = prev.accepted !== null ? prev : entry;
  }
  return out;
}

export const emptyState = (): WitnessState => ({ format: 'everdict.witness.state/1', logs: {} });

export function loadState(path: string): WitnessState {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyState();
    throw new WitnessError('CorruptState', `cannot read ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new WitnessError('CorruptState', `${path} is not JSON`);
  }
  const r = witnessStateSchema.safeParse(json);
  if (!r.success) throw new WitnessError('CorruptState', `${path} is not a witness state`);
  return { ...r.data, logs: foldLogs(r.data.logs, path) };
}

let counter = 0;

/** The one step of a save a test can make fail: the fsync of the state file's directory. */
export interface StateDisk {
  /** Makes the directory entry of a rename durable; throws when it cannot. */
  fsyncDirectory(dir: string): void;
}

export const nodeStateDisk: StateDisk = {
  fsyncDirectory(dir) {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
};

/**
 * Writes the state atomically and durably: a temp file in the same directory, fsynced, renamed over the old
 * one, the directory fsynced. Any failure is `StateUnwritable`, with the temp file removed: the caller has
 * not committed the state it tried to write. That includes the directory's fsync: until it succeeds the
 * rename may not survive a crash, so a tree this state names must not be cosigned yet (the file may already
 * hold it; the next save writes it again).
 */
export function saveState(path: string, state: WitnessState, disk: StateDisk = nodeStateDisk): void {
  const text = `${JSON.stringify(witnessStateSchema.parse(state), null, 2)}\n`;
  const tmp = join(dirname(path), `.${process.pid}.${++counter}.witness-state.tmp`);
  try {
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeFileSync(fd, text); // loops until every byte is written
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new WitnessError('StateUnwritable', `cannot write ${path}: ${(e as Error).message}`);
  }
  try {
    disk.fsyncDirectory(dirname(path));
  } catch (e) {
    throw new WitnessError(
      'StateUnwritable',
      `${path} written but its directory could not be fsynced: ${(e as Error).message}`,
    );
  }
}
