// Quickstart: create a run, drive it through the status machine, group it, score it, and let its
// settle fact trigger a subscription. Run it: `pnpm --filter @everdict/run-model example`.
import {
  addRuns,
  applyGraders,
  applyTransition,
  attachScoring,
  causationCheck,
  createGroup,
  createRun,
  eventFromFact,
  health,
  matchEvent,
  rollupGroup,
  Subscription,
  transition,
} from '@everdict/run-model';

export function main() {
  const now = (s) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

  // 1. A member runs a workspace script: a command run, born queued.
  const { run: queued } = createRun(
    {
      kind: 'command',
      subject: { path: 'scripts/check.sh', image: 'alpine:3.20', command: ['sh', 'scripts/check.sh'] },
      origin: { cause: 'member', actor: 'u_1' },
      placement: { where: 'driver', isolation: 'process' },
      group: { id: 'g_1', role: 'case' },
    },
    { id: 'run_1', tenant: 't_1', createdBy: 'u_1', now: now(0) },
  );

  // 2. Transitions return a new run, the patch to store and the facts to publish.
  const started = applyTransition(queued, { type: 'start' }, now(1));
  const failed = applyTransition(
    { ...started.run, outputs: { ...started.run.outputs, exitCode: 1, summary: '3 tests failed' } },
    { type: 'fail', error: { code: 'exit_nonzero', message: 'exit 1' } },
    now(2),
  );
  const again = transition(failed.run, { type: 'succeed' }, now(3)); // terminal is terminal

  // 3. The group rolls up; phase 2 scores it without touching the run.
  const group = rollupGroup(
    addRuns(
      createGroup({
        id: 'g_1',
        tenant: 't_1',
        kind: 'experiment',
        label: 'check',
        createdBy: 'u_1',
        now: now(0),
      }),
      ['run_1'],
      now(0),
    ),
    [failed.run],
    now(2),
  );
  let n = 0;
  const { scoring } = applyGraders({
    group,
    runs: [failed.run],
    graders: [{ type: 'exit_code' }, { type: 'output_contains', text: 'failed' }],
    ids: () => `id_${++n}`,
    now: now(4),
  });
  const scorecard = attachScoring(group, scoring);

  // 4. The settle fact is an event; a subscription may turn it into an agent run.
  const event = eventFromFact(failed.facts[0], 'ev_1');
  const sub = Subscription.parse({
    id: 'sub_1',
    tenant: 't_1',
    selector: { eventKind: 'run.settled', filter: { outcome: 'failed' } },
    runSpec: {
      kind: 'agent',
      subject: { agentId: 'fixer', agentVersion: '1', permissionMode: 'ask' },
      placement: { where: 'inline' },
    },
    enabled: true,
    cooldownMs: 60_000,
    maxDepth: 3,
  });
  const verdict = matchEvent(sub, event)
    ? causationCheck({ sub, event, causingRun: failed.run, now: now(5) })
    : undefined;

  return {
    facts: [...started.facts, ...failed.facts].map((f) => f.type),
    health: health(failed.run, now(5)),
    secondSettle: again.ok ? 'accepted' : again.error.code,
    group: { kind: scorecard.kind, status: scorecard.status },
    passRates: scoring.aggregate.graders.map((g) => `${g.grader}=${g.passRate}`),
    trigger: verdict,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(main(), null, 2));
