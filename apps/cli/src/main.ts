#!/usr/bin/env node
// `everdict` — the command line of the platform. Exit codes: 0 ok, 1 the run failed or its record did not
// verify, 2 usage, 3 refused (4xx), 4 unavailable (5xx, network), 130 interrupted (Ctrl-C while waiting).
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

const io = processIo(abort.signal);
const code = await runCli(process.argv.slice(2), io, {
  register(program, _ctx, done) {
    registerStart(program, io, done);
  },
});
process.exit(code);
