// The head log in the control plane (issue 18 §2): see README "Transparency log".
import { generateKeyPair, type Hex, type KeyPair, keyPairFromSeed } from '@everdict/headlog';
import type { Db } from '../db/tx.js';
import { loadOrCreateSecret } from '../keys/signer.js';
import { HeadLog, type HeadLogOptions } from './head-log.js';

export { HeadLog, type HeadLogOptions, type LoggedLeaf } from './head-log.js';
export type { PassResult } from './sequencer.js';

/** How the core starts its head log: the key as a file (EVERDICT_LOG_KEY_FILE, 0600, created on first start) or given. */
export type StartHeadLogOptions = Omit<HeadLogOptions, 'key'> & {
  key?: KeyPair;
  keyFile?: string;
  /** Start the sequencing loop (default true; tests drive `HeadLog.pass()` themselves). */
  loop?: boolean;
};

export function openHeadLog(db: Db, o: StartHeadLogOptions): HeadLog {
  const key = o.key ?? (o.keyFile ? keyPairFromSeed(loadOrCreateSecret(o.keyFile)) : generateKeyPair());
  const log = new HeadLog(db, { ...o, key });
  if (o.loop !== false) log.start();
  return log;
}

/** EVERDICT_WITNESS_KEYS: Ed25519 public keys as hex, separated by commas or whitespace. */
export function parseWitnessKeys(raw: string | undefined): Hex[] {
  const keys = (raw ?? '')
    .split(/[\s,]+/)
    .map((k) => k.trim().toLowerCase())
    .filter((k) => k !== '');
  for (const k of keys)
    if (!/^[0-9a-f]{64}$/.test(k)) throw new Error(`EVERDICT_WITNESS_KEYS: ${k} is not 64 hex digits`);
  return [...new Set(keys)];
}
