// The steward's audit chain of one runner key (issue 18 §4; durable-run-records.md "Relation to the audit
// chain"), as `GET /runners/:id/audit` serves it: every attestation the key signed and the control plane
// accepted, in signing order, each naming the one before in `audit_prev`. `verify-audit` checks, link by
// link: the body decodes (`MalformedRecord`), its address is the one served (`AttestationMismatch`), it
// is signed by the chain's key (`BadSignature`), and its `audit_prev` is the previous link's address
// (`AuditChainBroken`). A deleted, reordered or inserted interval breaks it. The first link names none (the
// key's genesis) or a predecessor the serving ledger never saw (the chain began against an earlier ledger):
// then the result's `from` says where the served chain starts, so it cannot pass for a chain from genesis.
import * as z from 'zod';
import { attestationAddress } from './attestation.js';
import { decodeAttestationBody } from './bundle.js';
import { isAddr } from './bytes.js';
import { verifyAddressSignature } from './signature.js';
import type { Hex } from './types.js';

const addr = z.string().refine(isAddr, 'an address: 64 lowercase hex digits');
export const auditChainInput = z.object({
  runner: z.string(),
  key: addr,
  links: z.array(
    z.object({
      address: addr,
      audit_prev: addr.nullable(),
      attestation: z.unknown(),
    }),
  ),
});

export type AuditChainResult =
  | { ok: true; length: number; head: Hex | null; from: Hex | null }
  | { ok: false; error: string; index?: number; message: string };

/** Verifies a served audit chain; `key` (when given) must be the chain's key. */
export function verifyAuditChain(json: unknown, opts: { key?: Hex } = {}): AuditChainResult {
  const r = auditChainInput.safeParse(json);
  if (!r.success) return { ok: false, error: 'MalformedRecord', message: 'not an audit chain' };
  const { key, links } = r.data;
  if (opts.key !== undefined && opts.key !== key)
    return { ok: false, error: 'UntrustedAttestation', message: `the chain is of key ${key}` };
  const from: Hex | null = links[0]?.audit_prev ?? null;
  let prev: Hex | null = from;
  for (const [index, link] of links.entries()) {
    let body: ReturnType<typeof decodeAttestationBody>;
    try {
      body = decodeAttestationBody(link.attestation);
    } catch (e) {
      return { ok: false, error: 'MalformedRecord', index, message: (e as Error).message };
    }
    const address = attestationAddress(body);
    if (address !== link.address)
      return {
        ok: false,
        error: 'AttestationMismatch',
        index,
        message: 'the body is not the served address',
      };
    if (!body.signature || body.signature.key !== key || !verifyAddressSignature(address, body.signature))
      return { ok: false, error: 'BadSignature', index, message: 'not signed by the chain’s key' };
    const named = body.auditPrev ?? null;
    if (named !== prev || link.audit_prev !== named)
      return {
        ok: false,
        error: 'AuditChainBroken',
        index,
        message: `audit_prev is ${named ?? 'absent'}, the previous link is ${prev ?? 'none'}`,
      };
    prev = address;
  }
  return { ok: true, length: links.length, head: links.length === 0 ? null : prev, from };
}
