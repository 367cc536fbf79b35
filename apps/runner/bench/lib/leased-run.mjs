// One command run held under a real lease of the built control plane, for the benches that drive one of the
// runner's interval steps directly (upload-out.mjs, output.mjs): a runner paired with `everdict-runner pair`,
// a command run created and leased by it, its lease beaten every 2 s (issue 7's 10 s expiry) until `stop()`.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createClient, dataOf } from '@everdict/client';
import { HttpRunnerApi, loadPairing } from '../../dist/index.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** `cp`: a started control plane (`startControlPlane`); `stateDir`: where the paired runner keeps its key. */
export async function leasedCommandRun(cp, stateDir) {
  const admin = createClient({ baseUrl: cp.url, token: cp.apiKey });
  const { token } = dataOf(await admin.POST('/runners/pairing-tokens', {}));
  const paired = spawn(
    process.execPath,
    [CLI, 'pair', cp.url, token, '--name', 'bench', '--state-dir', stateDir],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const code = await new Promise((r) => paired.once('exit', r));
  if (code !== 0) throw new Error(`everdict-runner pair exited ${code}`);
  const { credential } = await loadPairing(stateDir);
  const api = new HttpRunnerApi(cp.url, credential);
  const created = dataOf(
    await admin.POST('/runs', { body: { kind: 'command', subject: { command: ['true'] } } }),
  );
  const runId = created.run?.id ?? created.id;
  const [lease] = await api.leases(1, 5_000);
  if (lease?.runId !== runId) throw new Error('the run was not leased');
  const heartbeats = setInterval(
    () => void api.heartbeat([{ runId, epoch: lease.epoch }]).catch(() => {}),
    2_000,
  );
  return { api, lease, runId, stop: () => clearInterval(heartbeats) };
}
