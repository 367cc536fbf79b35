// The one error of the runner daemon, with a stable code.
export const RUNNER_ERROR_CODES = [
  'not_paired',
  'bad_state',
  'bad_lease',
  'bad_harness_output',
  'usage',
] as const;
export type RunnerErrorCode = (typeof RUNNER_ERROR_CODES)[number];

export class RunnerError extends Error {
  override readonly name = 'RunnerError';
  constructor(
    readonly code: RunnerErrorCode,
    message: string,
  ) {
    super(message);
  }
}
