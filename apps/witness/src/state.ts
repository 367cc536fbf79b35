// The witness's memory: per log, its pinned key and the last STH it accepted. Written atomically (a temp
// file in the same directory, fsynced, renamed over the old one, the directory fsynced) before the
// cosignature leaves, so a crash never leaves a witness that cosigned a tree it does not remember. A state
// file that exists but does not parse is refused (`CorruptState`): starting empty would re-accept any tree.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
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
  return r.data;
}

let counter = 0;

export function saveState(path: string, state: WitnessState): void {
  const text = `${JSON.stringify(witnessStateSchema.parse(state), null, 2)}\n`;
  const tmp = join(dirname(path), `.${process.pid}.${++counter}.witness-state.tmp`);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  try {
    const dir = openSync(dirname(path), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  } catch {
    // a directory that cannot be opened for fsync (some filesystems): the rename is still atomic
  }
}
