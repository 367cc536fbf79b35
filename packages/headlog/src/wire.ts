// The log's HTTP wire contract (issue 18 §2's routes), as zod schemas and the builders a server answers
// with — so the control plane (`src/http/log.ts`), the test log server, the witness and the runrecord
// CLI speak one set of objects. Proof routes answer the spec's command-line objects exactly
// (`inclusionInput`, `consistencyInput`); an STH is the spec's JSON form, with its cosignatures beside it.
//
//   GET  /log/key                              → LogKeyResponse
//   GET  /log/sth                              → CosignedTreeHeadJson (the latest)
//   GET  /log/sth/:size                        → CosignedTreeHeadJson (the STH the log signed at that size)
//   GET  /log/proof/inclusion?index=&size=     → the `log-verify-inclusion` object
//   GET  /log/proof/consistency?from=&to=      → the `log-verify-consistency` object
//   POST /log/cosignatures   CosignatureSubmission → CosignatureAccepted (201)
//   GET  /runs/:id/log[?size=]  (API key)      → LoggedLeavesResponse (the run's leaves, one STH)
//   GET  /groups/:id/log[?size=] (API key)     → LoggedLeavesResponse (every logged run of the group)
//   GET  /groups/:id/proof[?size=] (API key)   → GroupProofResponse (the same, in one cosigned STH)
//   errors                                     → Problem (application/problem+json)
import * as z from 'zod';
import { bytesToHex, type Hex, parseHex } from './bytes.js';
import { consistencyInput, inclusionInput } from './commands.js';
import { isLeafBytes } from './leaf.js';
import {
  type Cosignature,
  cosignatureSchema,
  parseTreeHeadJson,
  type SignedTreeHead,
  treeHeadToJson,
} from './tree-head.js';

const hash = z.string().regex(/^[0-9a-f]{64}$/);
const signature = z.string().regex(/^[0-9a-f]{128}$/);
const u64 = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,15})$/)
  .refine((s) => Number.isSafeInteger(Number(s)));
const size = z.number().refine((n) => Number.isSafeInteger(n) && n >= 0, 'a non-negative safe integer');
const leafHex = z.string().refine((s) => {
  const b = parseHex(s);
  return b !== undefined && isLeafBytes(b);
}, 'a leaf: 162 bytes starting with the tag, lowercase hex');

/** The route paths, for a server's router and a client's URLs. */
export const WIRE_ROUTES = {
  key: '/log/key',
  sth: '/log/sth',
  sthAt: '/log/sth/:size',
  inclusion: '/log/proof/inclusion',
  consistency: '/log/proof/consistency',
  cosignatures: '/log/cosignatures',
  runLog: '/runs/:id/log',
  groupLog: '/groups/:id/log',
  groupProof: '/groups/:id/proof',
} as const;

/** The spec's STH JSON form. */
export const treeHeadWire = z.strictObject({
  tree_size: u64,
  root: hash,
  timestamp_ms: u64,
  log_id: hash,
  signature,
});
export { cosignatureSchema as cosignatureWire };

/** `GET /log/sth`, `GET /log/sth/:size`: the STH with every cosignature the log holds for it. */
export const cosignedTreeHeadWire = z.strictObject({
  sth: treeHeadWire,
  cosignatures: z.array(cosignatureSchema),
});
export type CosignedTreeHeadJson = z.infer<typeof cosignedTreeHeadWire>;

/** `GET /log/key`: the log's Ed25519 public key and `log_id = H(key)`. */
export const logKeyWire = z.strictObject({ public_key: hash, log_id: hash });
export type LogKeyResponse = z.infer<typeof logKeyWire>;

/** `GET /log/proof/inclusion`: exactly the `log-verify-inclusion` input (leaf bytes included). */
export const inclusionProofWire = inclusionInput;
/** `GET /log/proof/consistency`: exactly the `log-verify-consistency` input. */
export const consistencyProofWire = consistencyInput;

/** One logged leaf with its audit path in the response's STH. */
export const loggedLeafWire = z.strictObject({ leaf: leafHex, index: size, path: z.array(hash) });
export type LoggedLeafJson = z.infer<typeof loggedLeafWire>;

/**
 * `GET /runs/:id/log` and `GET /groups/:id/log`: leaves with inclusion proofs in one STH (given with its
 * cosignatures), in index order. For a run: every leaf of the run in that tree. For a group: at least the
 * latest leaf of every run of the group in that tree.
 */
export const loggedLeavesWire = z.strictObject({
  sth: cosignedTreeHeadWire,
  leaves: z.array(loggedLeafWire),
});
export type LoggedLeavesResponse = z.infer<typeof loggedLeavesWire>;

/** `GET /groups/:id/proof`: the group's hash and every logged run's leaves in one cosigned STH. */
export const groupProofWire = z.strictObject({
  group_hash: hash,
  sth: cosignedTreeHeadWire,
  leaves: z.array(loggedLeafWire),
});
export type GroupProofResponse = z.infer<typeof groupProofWire>;

/** `POST /log/cosignatures`: a witness's cosignature over the STH it names (by its full JSON form). */
export const cosignatureSubmissionWire = z.strictObject({
  sth: treeHeadWire,
  cosignature: cosignatureSchema,
});
export type CosignatureSubmission = z.infer<typeof cosignatureSubmissionWire>;

/** `201` to a submission: how many distinct cosignatures the log now holds for that STH. */
export const cosignatureAcceptedWire = z.strictObject({ tree_size: u64, cosignatures: size });
export type CosignatureAccepted = z.infer<typeof cosignatureAcceptedWire>;

/** Every refusal: RFC 9457 problem details with the stable code. */
export const problemWire = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  code: z.string(),
  detail: z.string().optional(),
});
export type Problem = z.infer<typeof problemWire>;

/** Query strings: decimal non-negative integers, no sign, no leading zero. */
export const sizeParam = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,15})$/)
  .transform(Number)
  .refine(Number.isSafeInteger);
export const inclusionQuery = z.strictObject({ index: sizeParam, size: sizeParam });
export const consistencyQuery = z.strictObject({ from: sizeParam, to: sizeParam });
export const treeSizeQuery = z.strictObject({ size: sizeParam.optional() });

// Builders: what a server answers, from the package's own values (each checked against its schema).

export function cosignedTreeHeadToWire(
  sth: SignedTreeHead,
  cosignatures: readonly Cosignature[],
): CosignedTreeHeadJson {
  return cosignedTreeHeadWire.parse({ sth: treeHeadToJson(sth), cosignatures: [...cosignatures] });
}

export function loggedLeafToWire(l: {
  leaf: Uint8Array;
  index: number;
  path: readonly Uint8Array[];
}): LoggedLeafJson {
  return loggedLeafWire.parse({ leaf: bytesToHex(l.leaf), index: l.index, path: l.path.map(bytesToHex) });
}

export function logKeyToWire(publicKey: Uint8Array, logId: Hex): LogKeyResponse {
  return logKeyWire.parse({ public_key: bytesToHex(publicKey), log_id: logId });
}

// Readers: wire objects back to the package's values.

/** A cosigned STH from the wire: the STH (`MalformedTreeHead` if it is not one) and its cosignatures. */
export function cosignedTreeHeadFromWire(j: CosignedTreeHeadJson): {
  sth: SignedTreeHead;
  cosignatures: Cosignature[];
} {
  return { sth: parseTreeHeadJson(j.sth), cosignatures: j.cosignatures };
}

/** Logged leaves from the wire, as `verifyLoggedLeaves` takes them. */
export function loggedLeavesFromWire(
  leaves: readonly LoggedLeafJson[],
): { leaf: Uint8Array; index: number; path: Uint8Array[] }[] {
  return leaves.map((l) => ({
    leaf: parseHex(l.leaf)!,
    index: l.index,
    path: l.path.map((p) => parseHex(p)!),
  }));
}
