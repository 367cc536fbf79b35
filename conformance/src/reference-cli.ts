// The reference encoder behind the command-line contracts (`build` / `verify [--expect-head HEX]`, and the
// head log's `log-root` / `log-verify-inclusion` / `log-verify-consistency`). Not a product: it lets the suite
// check itself (`--impl "node conformance/dist/reference-cli.js"`) and gives the test fixtures something to
// break deliberately. `--mutant NAME` first runs the log commands with one defect (reference/log-mutants.ts):
//   --impl "node conformance/dist/reference-cli.js --mutant repeat-old-root"
import { readFileSync } from 'node:fs';
import { referenceImplementation } from './reference/implementation.js';
import { logMutant } from './reference/log-implementation.js';
import { isLogMutant, LOG_MUTANTS } from './reference/log-mutants.js';

let argv = process.argv.slice(2);
let impl = referenceImplementation;
if (argv[0] === '--mutant') {
  const name = argv[1] ?? '';
  if (!isLogMutant(name)) {
    console.error(`reference-cli: --mutant is one of ${Object.keys(LOG_MUTANTS).join(', ')}`);
    process.exit(2);
  }
  impl = logMutant(name);
  argv = argv.slice(2);
}
const [subcommand, ...args] = argv;
if (subcommand === undefined) {
  console.error(
    'usage: reference-cli [--mutant NAME] build < ops.json | verify [--expect-head HEX] [--trust-key HEX]… < wire.json | log-root | log-verify-inclusion | log-verify-consistency < input.json',
  );
  process.exit(2);
}
const result = await impl.invoke(subcommand, readFileSync(0, 'utf8'), args);
process.stdout.write(result.stdout);
process.stderr.write(result.stderr);
process.exitCode = result.exitCode ?? 1;
