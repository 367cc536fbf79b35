// The reference encoder behind the command-line contract (`build` / `verify [--expect-head HEX]`).
// Not a product: it lets the suite check itself (`--impl "node conformance/dist/reference-cli.js"`) and
// gives the test fixtures something to break deliberately.
import { readFileSync } from 'node:fs';
import { referenceImplementation } from './reference/implementation.js';

const [subcommand, ...args] = process.argv.slice(2);
if (subcommand !== 'build' && subcommand !== 'verify') {
  console.error(
    'usage: reference-cli build < ops.json | verify [--expect-head HEX] [--trust-key HEX]… < wire.json',
  );
  process.exit(2);
}
const result = await referenceImplementation.invoke(subcommand, readFileSync(0, 'utf8'), args);
process.stdout.write(result.stdout);
process.exitCode = result.exitCode ?? 1;
