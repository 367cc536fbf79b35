// Runnable: `pnpm --filter @everdict/admission build && node packages/admission/examples/quickstart.mjs`
// (a test runs it too). In your code, import from '@everdict/admission'.
import { admit, cancelTree, configureTenant, dequeue, MemoryAdmissionStore, release } from '../dist/index.js';

const store = new MemoryAdmissionStore();
await configureTenant(store, 'acme', { budget: { usd: 100 }, maxConcurrent: 4 });
const now = Date.now();

// An event wakes an agent with a $10 slice of the tenant budget; the agent fans out two eval runs.
const agent = await admit(
  store,
  {
    requestId: 'evt-42',
    runId: 'agent-run-1',
    tenant: 'acme',
    kind: 'agent',
    cause: 'event',
    envelope: { id: 'slice-agent-run-1', caps: { usd: 10 } },
  },
  now,
);
for (const runId of ['eval-1', 'eval-2']) {
  await admit(
    store,
    { requestId: runId, runId, tenant: 'acme', kind: 'eval', cause: 'run', causedByRunId: 'agent-run-1' },
    now,
  );
}
console.log(agent.outcome, agent.class, agent.envelopeId); // admitted background slice-agent-run-1

const started = await dequeue(store, 2, now + 5);
console.log(started.map((d) => d.runId).join(',')); // agent-run-1,eval-1
await release(
  store,
  { tenant: 'acme', runId: 'eval-1', status: 'succeeded', actuals: { usd: 2.5, tokens: 900 } },
  now + 9,
);
console.log((await store.getEnvelope('acme', 'root:acme')).spent.usd); // 2.5 — charged through the slice to the root

const killed = await cancelTree(store, 'acme', 'agent-run-1', now + 10);
console.log(killed.cancelled.join(','), '| running to stop:', killed.toStop.length); // eval-2 | running to stop: 0
