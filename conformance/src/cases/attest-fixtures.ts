// What the ATTEST cases are made of: two signers (Ed25519 keys whose 32 secret bytes are H("signer-n")),
// attestation bodies bound to a position, and a chain simulator that hands each step the head before it
// (a body binds to that head). Signing and hashing use the reference (node:crypto, @noble/hashes).
import { Op } from '../contract/schemas.js';
import { attAddress, type BodyT, signedMessage } from '../reference/attestation.js';
import { segmentOf } from '../reference/build.js';
import { ascii, fromHex, H, labelAddress } from '../reference/bytes.js';
import { advance, genesis } from '../reference/chain.js';
import { L, le32Hex, littleEndian, P, publicKeyOf, signWith } from '../reference/ed25519.js';
import { GRANTS_A, UNIT_A } from './addresses.js';

export interface Signer {
  readonly seed: Uint8Array;
  readonly key: string;
}
const signer = (label: string): Signer => {
  const seed = H(ascii(label));
  return { seed, key: publicKeyOf(seed) };
};
export const SIGNER_1 = signer('signer-1');
export const SIGNER_2 = signer('signer-2');
export const K1 = SIGNER_1.key;
export const K2 = SIGNER_2.key;

/** The identity point as a public key, and R = identity, S = 0: accepted by ZIP-215 for every message. */
export const IDENTITY_KEY = le32Hex(1n);
export const IDENTITY_SIG = le32Hex(1n) + le32Hex(0n);
/** A point of order 8. */
export const ORDER_8_KEY = 'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a';
/** The identity encoded non-canonically (y = p + 1). */
export const IDENTITY_KEY_NONCANONICAL = le32Hex(P + 1n);

export const U64_MAX = '18446744073709551615';
export const journal = (n: number) => labelAddress(`journal-${n}`);

export type WireBody = Record<string, unknown>;

/** Interval n's fields: started 1764600000000 + 10000·(n−1), 4.2 s long, 8.4 J × n, estimated, cgroup model. */
export function fields(n: number): WireBody {
  const started = 1_764_600_000_000n + 10_000n * BigInt(n - 1);
  return {
    started_ms: started.toString(),
    ended_ms: (started + 4_200n).toString(),
    active_uj: (8_400_000n * BigInt(n)).toString(),
    provenance: 'estimated',
    meter: 'cgroup-cpu-model',
    journal_root: journal(n),
    outcome: 'succeeded',
    exit_code: 0,
  };
}

/**
 * Interval n's body bound at `headBefore` of (UNIT_A, GRANTS_A), with `over` applied, signed over its own
 * address by `by` (null: unsigned).
 */
export function bodyAt(
  headBefore: string,
  n = 1,
  by: Signer | null = SIGNER_1,
  over: WireBody = {},
): WireBody {
  const body: WireBody = {
    unit_id: UNIT_A,
    grants_id: GRANTS_A,
    record_head: headBefore,
    ...fields(n),
    ...over,
  };
  if (by === null) return body;
  return { ...body, signature: signatureOf(body, by) };
}

export function signatureOf(body: WireBody, by: Signer) {
  const address = attAddress(body as BodyT);
  return { alg: 'ed25519', key: by.key, sig: signWith(by.seed, signedMessage(address)) };
}

export const addressOf = (body: WireBody): string => attAddress(body as BodyT);

/** An execute op carrying its body (named by the body's own address unless `as` says otherwise). */
export function attested(body: WireBody, account?: unknown, as?: string): unknown {
  const op: Record<string, unknown> = { op: 'execute', attestation: as ?? addressOf(body) };
  if (account !== undefined) op.account = account;
  op.body = body;
  return op;
}

/** A step of a record: an op, or a function of the head before it that returns the op. */
export type Step = unknown | ((headBefore: string) => unknown);

/**
 * The ops of the steps, each function called with the head the record has before it (chained by the
 * reference with no rule checked, as build would chain them while no op is refused).
 */
export function chainOps(steps: readonly Step[], unit = UNIT_A, grants = GRANTS_A): unknown[] {
  let head = genesis(unit, grants);
  return steps.map((step) => {
    const op = typeof step === 'function' ? (step as (h: string) => unknown)(head) : step;
    const parsed = Op.safeParse(op);
    if (parsed.success) {
      try {
        head = advance(head, segmentOf(parsed.data));
      } catch {
        // a malformed snapshot: nothing after it is chained
      }
    }
    return op;
  });
}

/** A signed execute step of interval n (its body bound wherever the step lands). */
export const E =
  (n: number, by: Signer | null = SIGNER_1, over: WireBody = {}, account?: unknown) =>
  (h: string) =>
    attested(bodyAt(h, n, by, over), account);

/** The address a chained op names. */
export function addressAt(ops: readonly unknown[], index: number): string {
  return (ops[index] as { attestation: string }).attestation;
}

/** A signature whose S is replaced by S + L (the same scalar, a non-canonical encoding). */
export function withNonCanonicalS(sig: string): string {
  const s = littleEndian(fromHex(sig.slice(64)));
  return sig.slice(0, 64) + le32Hex(s + L);
}

/** A signature with one hex digit changed. */
export function flipped(sig: string, at = 10): string {
  return `${sig.slice(0, at)}${sig[at] === '0' ? '1' : '0'}${sig.slice(at + 1)}`;
}
