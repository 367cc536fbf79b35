// The reference encoder behind the Implementation interface, in-process: the suite's own tests run the
// vectors against it (they must all pass) and against deliberately broken variants of it (they must fail).
import type { Implementation, Invocation } from '../contract/implementation.js';
import { type ReferenceVariant, SPEC } from './attest-rules.js';
import { referenceBuild } from './build.js';
import { referenceLog } from './log-commands.js';
import { logInvocation } from './log-implementation.js';
import { referenceVerify } from './verify.js';

/** `--expect-head HEX` (the last one) and every `--trust-key HEX`, lower-cased. */
function verifyArgs(args: readonly string[]): { expectHead?: string; trustKeys?: string[] } {
  let expectHead: string | undefined;
  let trustKeys: string[] | undefined;
  for (let i = 0; i < args.length; i++) {
    const value = args[i + 1]?.toLowerCase();
    if (args[i] === '--expect-head') expectHead = value;
    else if (args[i] === '--trust-key' && value !== undefined) trustKeys = [...(trustKeys ?? []), value];
    else continue;
    i++;
  }
  return { ...(expectHead === undefined ? {} : { expectHead }), ...(trustKeys ? { trustKeys } : {}) };
}

function done(exitCode: number, value: unknown): Invocation {
  return { exitCode, stdout: `${JSON.stringify(value)}\n`, stderr: '', timedOut: false };
}

/** The reference (or a variant of it, for the suite's own tests) behind the command-line contract. */
export function createReferenceImplementation(
  variant: ReferenceVariant = SPEC,
  label?: string,
): Implementation {
  return {
    label: label ?? 'reference encoder (in-process)',
    invoke: (subcommand, stdin, args) => invoke(variant, subcommand, stdin, args),
  };
}

export const referenceImplementation: Implementation = createReferenceImplementation();

async function invoke(
  variant: ReferenceVariant,
  subcommand: Parameters<Implementation['invoke']>[0],
  stdin: string,
  args: readonly string[],
): Promise<Invocation> {
  // The head log's commands, and any subcommand no contract names (exit 2).
  if (subcommand !== 'build' && subcommand !== 'verify')
    return logInvocation(referenceLog(subcommand, stdin));
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
    const outcome = referenceBuild(input, variant);
    return 'built' in outcome ? done(0, outcome.built) : done(1, outcome.refused);
  }
  const verdict = referenceVerify(input, verifyArgs(args), variant);
  return done(verdict.ok ? 0 : 1, verdict);
}
