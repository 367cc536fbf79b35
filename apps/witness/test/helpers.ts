// A log over real HTTP (@everdict/headlog/testing — the wire contract the control plane's `/log` routes answer)
// and a witness key, for the witness's tests.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesToHex, generateKeyPair, type KeyPair } from '@everdict/headlog';
import { startTestLogServer, TestLog, type TestLogServer } from '@everdict/headlog/testing';

export const head = (n: number, salt = 0) => (n * 1_000 + salt).toString(16).padStart(64, '0');

export interface Fixture {
  dir: string;
  witness: KeyPair;
  witnessKeyFile: string;
  log: TestLog;
  server: TestLogServer;
}

/** A log with `leaves` leaves of run-1 (lengths 1…n) and one published STH, served over HTTP. */
export async function fixture(leaves = 3): Promise<Fixture> {
  const dir = mkdtempSync(join(tmpdir(), 'witness-'));
  const witness = generateKeyPair();
  const witnessKeyFile = join(dir, 'witness.key');
  writeFileSync(witnessKeyFile, `${bytesToHex(witness.secretKey)}\n`, { mode: 0o600 });
  const log = new TestLog(generateKeyPair(), [bytesToHex(witness.publicKey)]);
  for (let i = 1; i <= leaves; i++)
    log.append({ tenantId: 'acme', runId: 'run-1', length: i, head: head(i) });
  log.publish();
  const server = await startTestLogServer({ log });
  return { dir, witness, witnessKeyFile, log, server };
}
