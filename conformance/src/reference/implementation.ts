// The reference encoder behind the Implementation interface, in-process: the suite's own tests run the
// vectors against it (they must all pass) and against deliberately broken variants of it (they must fail).
import type { Implementation, Invocation } from '../contract/implementation.js';
import { referenceBuild } from './build.js';
import { referenceVerify } from './verify.js';

function expectHeadOf(args: readonly string[]): string | undefined {
  const at = args.indexOf('--expect-head');
  return at >= 0 ? args[at + 1] : undefined;
}

function done(exitCode: number, value: unknown): Invocation {
  return { exitCode, stdout: `${JSON.stringify(value)}\n`, stderr: '', timedOut: false };
}

export const referenceImplementation: Implementation = {
  label: 'reference encoder (in-process)',
  async invoke(subcommand, stdin, args) {
    let input: unknown;
    try {
      input = JSON.parse(stdin);
    } catch {
      return done(
        1,
        subcommand === 'verify' ? { ok: false, error: 'MalformedRecord' } : { error: 'MalformedRecord' },
      );
    }
    if (subcommand === 'build') {
      const outcome = referenceBuild(input);
      return 'built' in outcome ? done(0, outcome.built) : done(1, outcome.refused);
    }
    const verdict = referenceVerify(input, expectHeadOf(args));
    return done(verdict.ok ? 0 : 1, verdict);
  },
};
