// Rules 6–9 of the attestation bundle, one small function each, checked for an executed segment right
// after its PhaseViolation check. A `ReferenceVariant` says in which order they run, how signatures are
// verified and how cost and orphan entries are treated: `SPEC` is the spec; the suite's tests build
// deliberately wrong variants (test/fixtures/attest-mutants.ts) to prove that the ATTEST cases catch them.
import type { ErrorCodeT } from '../contract/schemas.js';
import { attAddress, Body, type BodyT, signedMessage } from './attestation.js';
import { strictVerify } from './ed25519.js';

/** One executed segment, as rules 6–9 see it. */
export interface AttestSite {
  readonly unitId: string;
  readonly grantsId: string;
  /** The record's head before this segment. */
  readonly headBefore: string;
  /** The address the segment names. */
  readonly address: string;
  /** Whether the bundle has an entry under that address, and the entry as it stands. */
  readonly bundled: boolean;
  readonly raw: unknown;
  readonly trustKeys: readonly string[] | undefined;
}

/** What the rules learn as they go (the body, once rule 6 has read it). */
export interface AttestScratch {
  body?: BodyT;
}

export type AttestRule = (
  site: AttestSite,
  scratch: AttestScratch,
  variant: ReferenceVariant,
) => ErrorCodeT | undefined;

/** Rule 6, first half: the entry is exactly a well-formed body. */
export const wellFormed: AttestRule = (site, scratch) => {
  if (!site.bundled) return undefined;
  const parsed = Body.safeParse(site.raw);
  if (!parsed.success) return 'MalformedRecord';
  scratch.body = parsed.data;
  return undefined;
};

/** Rule 6, second half: H(att) is the segment's address. */
export const hashesToAddress: AttestRule = (site, { body }) =>
  body !== undefined && attAddress(body) !== site.address ? 'AttestationMismatch' : undefined;

/** Rule 7: this record's unit and grant set, and the head before this segment. */
export const boundHere: AttestRule = (site, { body }) => {
  if (body === undefined) return undefined;
  const here =
    body.unit_id === site.unitId && body.grants_id === site.grantsId && body.record_head === site.headBefore;
  return here ? undefined : 'AttestationMismatch';
};

/** Rule 8: a signature, when present, verifies over "sandbox.attestation.sig/1" ‖ address. */
export const signatureVerifies: AttestRule = (site, { body }, variant) => {
  const s = body?.signature;
  if (s === undefined) return undefined;
  return variant.verifySignature(s.sig, signedMessage(site.address), s.key) ? undefined : 'BadSignature';
};

/** Rule 9: with trusted keys, the attestation is bundled and signed by one of them. */
export const trustedSigner: AttestRule = (site, { body }) => {
  if (site.trustKeys === undefined) return undefined;
  const key = body?.signature?.key;
  return key !== undefined && site.trustKeys.includes(key) ? undefined : 'UntrustedAttestation';
};

export interface ReferenceVariant {
  /** Rules 6–9 in their order (`build` runs them without rule 9). */
  readonly rules: readonly AttestRule[];
  readonly verifySignature: (sigHex: string, message: Uint8Array, keyHex: string) => boolean;
  /** `unresolved` from the addresses of the executed segments that are not bundled, in order. */
  readonly unresolved: (unbundled: readonly string[]) => number;
  /** Whether a bundle entry no executed segment names is refused (after the last segment). */
  readonly refuseOrphans: boolean;
  /** Whether `"attestations": null` (or another non-object) is refused. */
  readonly refuseNonObjectBundle: boolean;
}

export const SPEC: ReferenceVariant = {
  rules: [wellFormed, hashesToAddress, boundHere, signatureVerifies, trustedSigner],
  verifySignature: strictVerify,
  unresolved: (unbundled) => unbundled.length,
  refuseOrphans: true,
  refuseNonObjectBundle: true,
};

/** The first rule a site breaks, if any. */
export function attestRuleBroken(
  site: AttestSite,
  variant: ReferenceVariant,
  rules: readonly AttestRule[] = variant.rules,
): { error?: ErrorCodeT; body?: BodyT } {
  const scratch: AttestScratch = {};
  for (const rule of rules) {
    const error = rule(site, scratch, variant);
    if (error !== undefined) return { error };
  }
  return scratch.body === undefined ? {} : { body: scratch.body };
}

/** The wire form's `attestations`: absent, an object (entries by own key), or not an object. */
export function readBundle(input: unknown): Map<string, unknown> | 'absent' | 'not-an-object' {
  if (typeof input !== 'object' || input === null || !('attestations' in input)) return 'absent';
  const a = (input as { attestations: unknown }).attestations;
  if (typeof a !== 'object' || a === null || Array.isArray(a)) return 'not-an-object';
  return new Map(Object.keys(a).map((k) => [k, (a as Record<string, unknown>)[k]]));
}
