// placement.kubernetes.watch — pod phase changes delivered per second through a watch on the test API
// server, by the driver's PodWatch (client-node's Watch + resourceVersion bookkeeping), against a raw
// HTTPS NDJSON reader of the same server as the baseline, in the same process. Both replay the same
// history: PODS pods taken Pending → Running → Succeeded by a runner that starts and ends containers at
// once (this measures delivery, not execution), then each consumer watches from before the first one.
// Prints `BENCH {json}`. Run: pnpm --filter @everdict/placement-kubernetes build && pnpm --filter @everdict/placement-kubernetes bench
// Env: BENCH_PODS (default 1000), BENCH_ROUNDS (default 5; the median is reported).
import { Agent, request } from 'node:https';
import { PassThrough } from 'node:stream';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { MANAGED_BY, PodWatch } from '../dist/index.js';
import { startTestApiServer } from '../dist/testing/index.js';

const PODS = Number(process.env.BENCH_PODS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const NS = 'bench';

/** A runner whose containers start and exit 0 at once. */
const instantRunner = {
  name: 'instant',
  async createSandbox() {
    const process = () => {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      stdout.end();
      stderr.end();
      return {
        stdin: null,
        stdout,
        stderr,
        resize() {},
        signal() {},
        started: Promise.resolve(),
        exit: Promise.resolve({ exitCode: 0, oomKilled: false }),
      };
    };
    return { start: async () => process(), exec: async () => process(), destroy: async () => {} };
  },
};

const server = await startTestApiServer({
  runner: instantRunner,
  namespaces: [NS],
  historyLimit: PODS * 20,
  bookmarkIntervalMs: 3_600_000,
});
const kc = new KubeConfig();
kc.loadFromString(server.kubeconfig(NS));
const core = kc.makeApiClient(CoreV1Api);
const from = server.resourceVersion;
const pod = (i) => ({
  metadata: { name: `p-${i}`, labels: { 'app.kubernetes.io/managed-by': 'everdict' } },
  spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1.36', command: ['true'] }] },
});
// setup (not measured): create the pods over one keep-alive connection pool
const agent = new Agent({ keepAlive: true, maxSockets: 8, ca: server.certificate });
const post = (body) =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port: server.port,
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/pods`,
        headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 201 ? resolve() : reject(new Error(`create: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
for (let i = 0; i < PODS; i += 50) {
  await Promise.all(Array.from({ length: Math.min(50, PODS - i) }, (_, j) => post(pod(i + j))));
}
agent.destroy();
const last = `p-${PODS - 1}`;
const succeeded = async () =>
  (await core.listNamespacedPod({ namespace: NS })).items.filter((p) => p.status?.phase === 'Succeeded')
    .length;
while ((await succeeded()) < PODS) await new Promise((r) => setTimeout(r, 200));

/** The baseline: GET …/pods?watch=true from `from`, split into lines, JSON.parse each; count phase changes. */
function rawWatch() {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const phases = new Map();
    let changes = 0;
    let events = 0;
    let buffered = '';
    const path = `/api/v1/namespaces/${NS}/pods?watch=true&resourceVersion=${from}&labelSelector=${encodeURIComponent(MANAGED_BY)}`;
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        ca: server.certificate,
        headers: { Authorization: `Bearer ${server.token}` },
      },
      (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          buffered += chunk;
          let nl = buffered.indexOf('\n');
          while (nl !== -1) {
            const event = JSON.parse(buffered.slice(0, nl));
            buffered = buffered.slice(nl + 1);
            events += 1;
            const name = event.object.metadata.name;
            const phase = event.object.status?.phase;
            if (phases.get(name) !== phase) changes += 1;
            phases.set(name, phase);
            if (name === last && phase === 'Succeeded') {
              const seconds = Number(process.hrtime.bigint() - started) / 1e9;
              req.destroy();
              resolve({ seconds, changes, events });
              return;
            }
            nl = buffered.indexOf('\n');
          }
        });
      },
    );
    req.on('error', (e) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
    req.end();
  });
}

/** The driver's watch: a PodWatch resuming from `from`, until the last pod is Succeeded in its cache. */
async function driverWatch() {
  const started = process.hrtime.bigint();
  const watch = new PodWatch(kc, core, NS, 500, from);
  await watch.waitFor(last, (p) => p?.status?.phase === 'Succeeded', 600_000);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const events = watch.stats.events;
  watch.close();
  return { seconds, events };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const raw = [];
const driver = [];
let changes = 0;
let events = 0;
await rawWatch(); // warm-up
await driverWatch();
for (let r = 0; r < ROUNDS; r++) {
  const a = await rawWatch();
  const b = await driverWatch();
  changes = a.changes;
  events = a.events;
  if (b.events !== a.events)
    throw new Error(`the driver's watch saw ${b.events} events, the raw reader ${a.events}`);
  raw.push(a.changes / a.seconds);
  driver.push(a.changes / b.seconds);
}
const rawRate = median(raw);
const driverRate = median(driver);
console.log(
  `BENCH ${JSON.stringify({
    name: 'placement.kubernetes.watch',
    pods: PODS,
    events,
    phase_changes: changes,
    phase_changes_per_s: Math.round(driverRate),
    raw_ndjson_phase_changes_per_s: Math.round(rawRate),
    ratio_to_raw_ndjson: Number((driverRate / rawRate).toFixed(3)),
    rounds: ROUNDS,
  })}`,
);
await server.close();
