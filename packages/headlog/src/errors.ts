/**
 * The three codes of the spec's command-line contract (`witnessed-heads.md`): every failed proof is one of
 * these. `MalformedProof` is whatever is decidable without hashing; the other two mean only that a
 * well-formed proof gave a different root.
 */
export const PROOF_ERROR_CODES = ['InclusionFailed', 'InconsistentLog', 'MalformedProof'] as const;
export type ProofErrorCode = (typeof PROOF_ERROR_CODES)[number];

/** What a reader proves against a log ("What a reader can prove"), plus a leaf that is not the one asked about. */
export const READER_ERROR_CODES = ['TruncatedRecord', 'ForkedRecord', 'OmittedRun', 'ForeignLeaf'] as const;
export type ReaderErrorCode = (typeof READER_ERROR_CODES)[number];

/**
 * Objects that cannot be encoded or do not check: a leaf or tree head that is not the spec's bytes, a
 * signature that does not verify (strict RFC 8032), a key that is not one, too few trusted cosignatures,
 * a proof asked for outside the tree, a node store that did not answer what a plan asked for.
 */
export const OBJECT_ERROR_CODES = [
  'MalformedLeaf',
  'MalformedTreeHead',
  'BadSignature',
  'InvalidKey',
  'InsufficientWitnesses',
  'OutOfRange',
  'MissingNode',
] as const;
export type ObjectErrorCode = (typeof OBJECT_ERROR_CODES)[number];

export type HeadLogErrorCode = ProofErrorCode | ReaderErrorCode | ObjectErrorCode;

export function isProofErrorCode(code: string): code is ProofErrorCode {
  return (PROOF_ERROR_CODES as readonly string[]).includes(code);
}

/** The one error class of `@everdict/headlog`. */
export class HeadLogError extends Error {
  override readonly name = 'HeadLogError';
  readonly code: HeadLogErrorCode;
  /** The reason in words, without the code. */
  readonly detail: string;

  constructor(code: HeadLogErrorCode, detail: string) {
    super(`${code}: ${detail}`);
    this.code = code;
    this.detail = detail;
  }
}

export function isHeadLogError(e: unknown): e is HeadLogError {
  return e instanceof HeadLogError;
}
