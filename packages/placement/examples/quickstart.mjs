// Runnable: `pnpm --filter @everdict/placement build && node packages/placement/examples/quickstart.mjs`
// (a test runs it too). In your code, import from '@everdict/placement'.
import { InlineDriver, placementOf, rungFor, utf8 } from '../dist/index.js';

const driver = new InlineDriver({ functions: { greet: ({ args }) => ({ stdout: `hello ${args[0]}` }) } });
const handle = await driver.provision({ labels: { tenant: 'acme', runId: 'run-1', kind: 'command' } });
const result = await driver.exec(handle, ['greet', 'world'], { timeoutMs: 1000 });
console.log(result.exitCode, utf8(result.stdout));
console.log(rungFor({ where: 'driver' }), JSON.stringify(placementOf('kubernetes', 'cluster-eu')));
await driver.dispose(handle);
