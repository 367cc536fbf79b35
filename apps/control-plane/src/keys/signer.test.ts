// The control plane's signing key: created once (mode 0600), reused on restart, refused when readable by
// others; node:crypto's signatures verify with runrecord's strict (RFC 8032, zip215: false) verifier.
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { blake3, bytesToHex, publicKeyOf, signAddress, verifyAddressSignature } from '@everdict/runrecord';
import { afterAll, describe, expect, it } from 'vitest';
import { startCore } from '../core.js';
import { loadOrCreateSecret, signerOf } from './signer.js';

const dir = mkdtempSync(path.join(tmpdir(), 'everdict-key-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the control-plane signing key', () => {
  it('is created mode 0600 on first start and reused after (same public key)', async () => {
    const file = path.join(dir, 'data', 'keys', 'control-plane.ed25519');
    const first = await startCore({ signingKey: { file }, scheduler: { enabled: false } });
    const key = first.keys.signer.publicKey;
    await first.close();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = readFileSync(file, 'utf8').trim();
    expect(publicKeyOf(new Uint8Array(Buffer.from(stored, 'hex')))).toBe(key);
    const again = await startCore({ signingKey: { file }, scheduler: { enabled: false } });
    expect(again.keys.signer.publicKey).toBe(key);
    expect((await again.keys.list())[0]).toEqual({ kind: 'control-plane', id: 'control-plane', key });
    await again.close();
  });

  it('refuses a key file readable by group or others', () => {
    const file = path.join(dir, 'wide.ed25519');
    loadOrCreateSecret(file);
    chmodSync(file, 0o644);
    expect(() => loadOrCreateSecret(file)).toThrow(/must be 0600/);
  });

  it("signs exactly what runrecord signs, and runrecord's strict verifier accepts it", () => {
    const secret = new Uint8Array(32).map((_, i) => i + 1);
    const s = signerOf(secret);
    expect(s.publicKey).toBe(publicKeyOf(secret));
    for (const text of ['a', 'b', 'c']) {
      const address = bytesToHex(blake3(new TextEncoder().encode(text)));
      const sig = s.sign(address);
      expect(sig).toEqual(signAddress(address, secret)); // Ed25519 is deterministic
      expect(verifyAddressSignature(address, sig)).toBe(true);
    }
  });
});
