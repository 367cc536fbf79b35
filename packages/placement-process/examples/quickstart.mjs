// Runnable (needs bubblewrap; as root the sandbox runs as uid 65534):
// `pnpm --filter @everdict/placement-process build && node packages/placement-process/examples/quickstart.mjs`
// (a test runs it too). In your code, import from '@everdict/placement-process' and '@everdict/placement'.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { utf8 } from '@everdict/placement';
import { ProcessDriver } from '../dist/index.js';

const dir = mkdtempSync(join(tmpdir(), 'everdict-example-'));
chmodSync(dir, 0o711); // the sandbox user must be able to pass through to its workspace
const driver = new ProcessDriver({ stateDir: join(dir, 'state'), imagesDir: join(dir, 'images') });
const handle = await driver.provision({
  labels: { tenant: 'acme', runId: 'run-1', kind: 'command' },
  limits: { memoryBytes: 128 * 1024 * 1024, pids: 64 },
});
const result = await driver.exec(
  handle,
  ['sh', '-c', 'echo "$1" > note.txt && cat note.txt && ls /', 'sh', 'hi'],
  {
    timeoutMs: 10_000,
  },
);
console.log(result.exitCode, utf8(result.stdout).split('\n').join(' ').trim());
const snapshot = await driver.snapshot(handle);
console.log(snapshot.address.length, driver.describe().mechanism === (await driver.capacity()).mechanism);
await driver.dispose(handle);
rmSync(dir, { recursive: true, force: true });
