// The reference's log commands behind the Implementation interface (in-process), optionally with one
// defect: how the suite's tests show that the LOG class fails each mutant.
import type { Implementation, Invocation } from '../contract/implementation.js';
import { type LogAnswer, referenceLog } from './log-commands.js';
import { LOG_MUTANTS, type LogMutantName } from './log-mutants.js';
import type { LogDefects } from './log-tree.js';

export function logInvocation(answer: LogAnswer): Invocation {
  return {
    exitCode: answer.exitCode,
    stdout: answer.output === undefined ? '' : `${JSON.stringify(answer.output)}\n`,
    stderr: answer.exitCode === 2 ? 'usage: log-root | log-verify-inclusion | log-verify-consistency\n' : '',
    timedOut: false,
  };
}

export function logReference(defects: LogDefects = {}, label = 'reference log (in-process)'): Implementation {
  return {
    label,
    invoke: async (subcommand, stdin) => logInvocation(referenceLog(subcommand, stdin, defects)),
  };
}

export function logMutant(name: LogMutantName): Implementation {
  return logReference(LOG_MUTANTS[name], `log mutant ${name}`);
}
