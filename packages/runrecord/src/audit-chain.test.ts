// A runner key's audit chain, as GET /runners/:id/audit serves it: an unbroken chain verifies; deleting,
// reordering or inserting a link, editing a body, or another key's signature is refused with its code.
import { describe, expect, it } from 'vitest';
import { verifyAuditChain } from './audit-chain.js';
import { encodeAttestationBody } from './bundle.js';
import { generateSigningKey, signAttestation } from './signature.js';
import type { Hex } from './types.js';

const key = generateSigningKey(new Uint8Array(32).fill(7));
const other = generateSigningKey(new Uint8Array(32).fill(9));
const addr = (b: number): Hex => b.toString(16).padStart(2, '0').repeat(32);

function link(i: number, prev: Hex | undefined, k = key) {
  const { body, address } = signAttestation(
    {
      unitId: addr(1),
      grantsId: addr(2),
      recordHead: addr(10 + i),
      startedMs: 1_000n + BigInt(i),
      endedMs: 2_000n + BigInt(i),
      activeUj: 5n,
      provenance: 'estimated',
      meter: 'test',
      journalRoot: addr(3),
      outcome: 'succeeded',
      exitCode: 0,
      ...(prev ? { auditPrev: prev } : {}),
    },
    k.secretKey,
  );
  return { address, audit_prev: prev ?? null, attestation: encodeAttestationBody(body) };
}

function chain(n: number) {
  const links = [];
  let prev: Hex | undefined;
  for (let i = 0; i < n; i++) {
    const l = link(i, prev);
    links.push(l);
    prev = l.address;
  }
  return { runner: 'rnr_1', key: key.publicKey, links };
}

describe('verifyAuditChain', () => {
  it('an unbroken chain verifies; the empty chain too', () => {
    const c = chain(4);
    expect(verifyAuditChain(c, { key: key.publicKey })).toEqual({
      ok: true,
      length: 4,
      head: c.links[3]!.address,
    });
    expect(verifyAuditChain({ ...c, links: [] })).toEqual({ ok: true, length: 0, head: null });
  });

  it('a deleted, reordered or inserted link breaks it', () => {
    const c = chain(4);
    const deleted = { ...c, links: [c.links[0], c.links[2], c.links[3]] };
    expect(verifyAuditChain(deleted)).toMatchObject({ ok: false, error: 'AuditChainBroken', index: 1 });
    const reordered = { ...c, links: [c.links[0], c.links[2], c.links[1], c.links[3]] };
    expect(verifyAuditChain(reordered)).toMatchObject({ ok: false, error: 'AuditChainBroken', index: 1 });
    const inserted = { ...c, links: [c.links[0], link(9, c.links[0]!.address), ...c.links.slice(1)] };
    expect(verifyAuditChain(inserted)).toMatchObject({ ok: false, error: 'AuditChainBroken', index: 2 });
    const headless = { ...c, links: c.links.slice(1) };
    expect(verifyAuditChain(headless)).toMatchObject({ ok: false, error: 'AuditChainBroken', index: 0 });
  });

  it('an edited body, a served address that is not the body’s, another key: refused', () => {
    const c = chain(2);
    const edited = structuredClone(c);
    (edited.links[1]!.attestation as { exit_code: number }).exit_code = 1;
    expect(verifyAuditChain(edited)).toMatchObject({ ok: false, index: 1 });
    const swapped = structuredClone(c);
    swapped.links[1]!.address = addr(0x77);
    expect(verifyAuditChain(swapped)).toMatchObject({ ok: false, error: 'AttestationMismatch', index: 1 });
    const foreign = { ...c, links: [c.links[0], link(1, c.links[0]!.address, other)] };
    expect(verifyAuditChain(foreign)).toMatchObject({ ok: false, error: 'BadSignature', index: 1 });
    expect(verifyAuditChain(c, { key: other.publicKey })).toMatchObject({
      ok: false,
      error: 'UntrustedAttestation',
    });
    expect(verifyAuditChain({ nope: 1 })).toMatchObject({ ok: false, error: 'MalformedRecord' });
  });
});
