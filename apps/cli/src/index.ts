// @everdict/cli — the `everdict` command line as a library: run it in-process (tests, other tools).
export { buildProgram, type ProgramExtras, runCli } from './program.js';
export { type Context, type Done, makeContext, resolveConnection } from './context.js';
export { CliError, type CliErrorCode, EXIT, type ExitCode } from './errors.js';
export type { Io } from './io.js';
export { SseParser, streamEvents, type SseEvent } from './sse.js';
export { startStack, type Stack, type StackOptions } from './stack/stack.js';
export { verifyRun, type VerifyReport } from './commands/record.js';
