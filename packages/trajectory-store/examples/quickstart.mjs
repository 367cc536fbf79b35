// Runnable: `pnpm --filter @everdict/trajectory-store build && node packages/trajectory-store/examples/quickstart.mjs`
// (a test runs it too). In your code, import from '@everdict/trajectory-store'.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { localBackend, TrajectoryStore } from '../dist/index.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'trajectories-'));
const store = new TrajectoryStore({ backend: localBackend({ root }) });
const ts = '2026-12-01T10:00:00.000Z';
const events = [
  { type: 'message', seq: 1, ts, runId: 'run-1', role: 'user', content: 'fix the failing test' },
  { type: 'llm_call', seq: 2, ts, runId: 'run-1', model: 'gpt-4o', inputTokens: 1200, outputTokens: 85 },
  { type: 'tool_call', seq: 3, ts, runId: 'run-1', callId: 'c1', tool: 'run_tests', input: { path: 'src' } },
];

const first = await store.append('acme', 'run-1', events.slice(0, 2));
const resent = await store.append('acme', 'run-1', events); // a runner retrying its whole batch
console.log(first.appended, resent.appended, resent.duplicates); // 2 1 2

const page = await store.read('acme', 'run-1', { offset: 1, limit: 10 });
console.log(page.items.map((e) => e.type).join(','), page.nextOffset); // llm_call,tool_call 3

const { ref } = await store.seal('acme', 'run-1'); // store ref on the run as run.trajectory
console.log(ref.eventCount, ref.digest);

await store.append('acme', 'run-1', events).catch((err) => console.log(err.code, err.httpStatus)); // trajectory_sealed 409
await store.close();
