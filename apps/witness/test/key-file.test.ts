// The witness key file: a seed others can read (or the group can write) is refused, not used — anyone who
// reads it can cosign as this witness. Group read is allowed (a Kubernetes Secret under a pod fsGroup is 0440).
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesToHex, generateKeyPair } from '@everdict/headlog';
import { describe, expect, it } from 'vitest';
import { readWitnessKey } from '../src/config.js';
import { WitnessError } from '../src/errors.js';

function keyFile(mode: number): { path: string; publicKey: string } {
  const pair = generateKeyPair();
  const path = join(mkdtempSync(join(tmpdir(), 'witness-key-')), 'witness.key');
  writeFileSync(path, `${bytesToHex(pair.secretKey)}\n`);
  chmodSync(path, mode);
  return { path, publicKey: bytesToHex(pair.publicKey) };
}

function codeOf(path: string): string {
  try {
    readWitnessKey(path);
    return 'ok';
  } catch (e) {
    if (e instanceof WitnessError) return e.code;
    throw e;
  }
}

describe('the witness key file', () => {
  it('is read when only its owner (and the group, reading) may access it', () => {
    for (const mode of [0o600, 0o400, 0o440, 0o640]) {
      const k = keyFile(mode);
      expect(bytesToHex(readWitnessKey(k.path).publicKey), mode.toString(8)).toBe(k.publicKey);
    }
  });

  it('is refused (BadConfig) when others may read it or the group may write it', () => {
    for (const mode of [0o644, 0o604, 0o602, 0o601, 0o660, 0o666, 0o777]) {
      expect(codeOf(keyFile(mode).path), mode.toString(8)).toBe('BadConfig');
    }
  });
});
