/**
 * The codes of `sandbox.runrecord/1`: every refusal and every verification failure is one of these. The
 * last three come with the attestation bundle (rules 6–9).
 */
export const SPEC_ERROR_CODES = [
  'HeadMismatch',
  'PhaseViolation',
  'RecordClosed',
  'SnapshotMismatch',
  'ManifestMismatch',
  'MalformedSnapshot',
  'ZeroIdleEnergy',
  'MalformedRecord',
  'AttestationMismatch',
  'BadSignature',
  'UntrustedAttestation',
] as const;
export type SpecErrorCode = (typeof SPEC_ERROR_CODES)[number];

/**
 * Codes this package adds beyond the spec. They never describe a record: `InvalidAttestation` refuses an
 * attestation object whose fields cannot be encoded (an attestation is not a record segment);
 * `InvalidKey` refuses a signing key that is not 32 bytes or a trusted key that is not 64 hex digits;
 * `BackendUnavailable` refuses selecting the hash-wasm backend where WebAssembly is missing.
 */
export const PACKAGE_ERROR_CODES = ['InvalidAttestation', 'InvalidKey', 'BackendUnavailable'] as const;
export type PackageErrorCode = (typeof PACKAGE_ERROR_CODES)[number];

export type RunRecordErrorCode = SpecErrorCode | PackageErrorCode;

export function isSpecErrorCode(code: string): code is SpecErrorCode {
  return (SPEC_ERROR_CODES as readonly string[]).includes(code);
}

/** The one error class of `@everdict/runrecord`. `index` names the segment (or op) to blame, if any. */
export class RunRecordError extends Error {
  override readonly name = 'RunRecordError';
  readonly code: RunRecordErrorCode;
  readonly index: number | undefined;
  /** The reason in words, without the code and index. */
  readonly detail: string;

  constructor(code: RunRecordErrorCode, detail: string, index?: number) {
    super(index === undefined ? `${code}: ${detail}` : `${code} at ${index}: ${detail}`);
    this.code = code;
    this.detail = detail;
    this.index = index;
  }

  /** The same error, blamed on segment/op `index`. */
  at(index: number): RunRecordError {
    return new RunRecordError(this.code, this.detail, index);
  }
}

export function isRunRecordError(e: unknown): e is RunRecordError {
  return e instanceof RunRecordError;
}
