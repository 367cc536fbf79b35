// The one error type of the witness: a stable code and the reason in words.
export const WITNESS_ERROR_CODES = [
  'BadConfig', // flags / environment that do not parse, a key file that is not a key
  'CorruptState', // a state file that exists but is not a witness state: refused, never replaced
  'LogUnavailable', // the log did not answer, or answered something that is not the wire contract
  'StateUnwritable', // the state file could not be written (and fsynced): nothing accepted, nothing cosigned
] as const;
export type WitnessErrorCode = (typeof WITNESS_ERROR_CODES)[number];

export class WitnessError extends Error {
  override readonly name = 'WitnessError';
  constructor(
    readonly code: WitnessErrorCode,
    readonly detail: string,
  ) {
    super(`${code}: ${detail}`);
  }
}
