// The runner key's audit chain: links are made one at a time across slots (each names the one before), the
// chain advances only when the control plane accepted the completion, and a restart continues it from the
// state directory's `audit.head`.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AUDIT_HEAD_FILE, AuditChain } from '../src/audit-chain.js';

const addr = (n: number) => n.toString(16).padStart(64, '0');
let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('AuditChain', () => {
  it('serializes links across slots: each names the previous, in signing order', async () => {
    dir = mkdtempSync(join(tmpdir(), 'audit-'));
    const chain = new AuditChain(join(dir, AUDIT_HEAD_FILE));
    const seen: (string | undefined)[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let started!: () => void;
    const inFirst = new Promise<void>((r) => {
      started = r;
    });
    const first = chain.link(async (prev) => {
      seen.push(prev);
      started();
      await gate; // slot 1 is still delivering: slot 2 must wait for it
      return { address: addr(1), result: 1 };
    });
    const second = chain.link(async (prev) => {
      seen.push(prev);
      return { address: addr(2), result: 2 };
    });
    await inFirst;
    expect(seen).toEqual([undefined]); // slot 2 has not signed: slot 1's link is not delivered yet
    release();
    expect(await Promise.all([first, second])).toEqual([1, 2]);
    expect(seen).toEqual([undefined, addr(1)]);
    expect(chain.head).toBe(addr(2));
  });

  it('does not advance on a refused or failed delivery; a restart continues from the file (0600)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'audit-'));
    const file = join(dir, AUDIT_HEAD_FILE);
    const chain = new AuditChain(file);
    await chain.link(async () => ({ address: addr(5), result: null }));
    await chain.link(async () => ({ address: null, result: null })); // aborted: nothing delivered
    await expect(
      chain.link(async () => {
        throw new Error('409 attestation_mismatch');
      }),
    ).rejects.toThrow('409');
    expect(chain.head).toBe(addr(5));
    expect(readFileSync(file, 'utf8').trim()).toBe(addr(5));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const restarted = new AuditChain(file);
    let named: string | undefined;
    await restarted.link(async (prev) => {
      named = prev;
      return { address: addr(6), result: null };
    });
    expect(named).toBe(addr(5));
  });

  it('a process killed while an answer is written keeps the accepted link: head or resumable', () => {
    dir = mkdtempSync(join(tmpdir(), 'audit-'));
    const file = join(dir, AUDIT_HEAD_FILE);
    const chain = new AuditChain(file);
    const sent = chain.sending([addr(1)]); // written before the call
    // The control plane accepted addr(1); the answer is taken — and the process dies at its second file
    // write (stood in for here by a write that fails: a directory where its temporary file goes).
    chain.answered(sent, true);
    chain.advance(addr(1), false);
    mkdirSync(`${file}.tmp`);
    expect(() => chain.persist()).toThrow();
    // Restarted: the accepted link is the head, or a link the control plane may name to resume from.
    const restarted = new AuditChain(file);
    expect(restarted.head === addr(1) || restarted.resumeAt(addr(1))).toBe(true);
    expect(restarted.head).toBe(addr(1));
  });
});
