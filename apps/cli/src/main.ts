#!/usr/bin/env node
// `everdict` — the command line of the platform. Exit codes: 0 ok, 1 the run failed or its record did not
// verify, 2 usage, 3 refused (4xx), 4 unavailable (5xx, network), 130 interrupted (Ctrl-C while waiting), 141 the
// reader of its output went away (a closed pipe).
import { registerStart } from './commands/start.js';
import { processIo } from './io.js';
import { runCli } from './program.js';

const abort = new AbortController();
let interrupts = 0;
const onSignal = () => {
  interrupts += 1;
  if (interrupts > 1) process.exit(130);
  abort.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

// A reader that went away (`everdict runs --json | head`): stop as SIGPIPE stops a C tool (128 + 13), not with
// an unhandled EPIPE and its stack trace.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(141);
    throw e;
  });

const io = processIo(abort.signal);
const code = await runCli(process.argv.slice(2), io, {
  register(program, _ctx, done) {
    registerStart(program, io, done);
  },
});
// On a pipe stdout and stderr are asynchronous: process.exit drops what the reader has not taken yet (past the
// pipe's 64 KiB, `everdict runs --json | jq` lost the rest). An empty write's callback runs once every write
// before it has been handed to the OS (or the stream has failed: a reader gone is no reason to wait).
await Promise.all([process.stdout, process.stderr].map((s) => new Promise((done) => s.write('', done))));
process.exit(code);
