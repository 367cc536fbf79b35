// @everdict/cli — the `everdict` command line as a library: run it in-process (tests, other tools).

export { type VerifyReport, verifyRun } from './commands/record.js';
export { type Context, type Done, makeContext, resolveConnection } from './context.js';
export { CliError, type CliErrorCode, EXIT, type ExitCode } from './errors.js';
export type { Io } from './io.js';
export { buildProgram, type ProgramExtras, runCli } from './program.js';
export { type SseEvent, SseParser, streamEvents } from './sse.js';
export { type Stack, type StackOptions, startStack } from './stack/stack.js';
