// everdict demo (`pnpm demo`) — against the running main job: an experiment of 20 eval runs scored and
// re-scored, a causal tree cancelled in one cascade, an envelope refusing fan-out, and — where this control
// plane has the routes — an agent conversation that parks for an approval (listed by GET /runs/:id/input,
// approved by POST) and resumes, and a sandbox with
// exec and a terminal (the ticket flow `everdict sandbox shell` uses). It prints what happened, then verifies EVERY record it made, locally, trusting the keys of the
// signers GET /keys lists. Exit 0 only if every step ran and every record verifies.
import { PassThrough, Writable } from 'node:stream';
import { ClientError } from '@everdict/client';
import type { Command } from 'commander';
import { pause } from '../backoff.js';
import type { Context, Done } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { type Io, line } from '../io.js';
import { answer, describePending, pendingInput } from './agent.js';
import { type GroupSummary, scoreGroup, scoreTable, waitGroup } from './experiment.js';
import { describeVerdict, verifyRun } from './record.js';
import { openShell } from './shell.js';
import { getRun, TERMINAL } from './watch.js';

interface Created {
  run: { id: string; status: string };
}

/** What the demo's terminal printed. */
class Collector extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString('utf8');
    cb();
  }
}

const SLEEP = (ms: number) => ({ kind: 'analysis', subject: { config: { fn: 'sleep', ms } } });

const isRefusal = (e: unknown, status?: number): e is ClientError =>
  e instanceof ClientError &&
  (status === undefined ? e.status >= 400 && e.status < 500 : e.status === status);

const missingRoute = (e: unknown) =>
  e instanceof ClientError && e.status === 404 && e.code === 'route_not_found';

export class Demo {
  readonly made: string[] = [];
  readonly skipped: string[] = [];
  constructor(readonly ctx: Context) {}

  say(text: string): void {
    line(this.ctx.io.stdout, text);
  }

  /** `POST /runs` through the typed client: bounded by the request timeout, cut by Ctrl-C, key only if set. */
  async create(spec: unknown, causedBy?: string): Promise<string> {
    const { data } = await this.ctx.client.POST('/runs', {
      body: spec as never,
      ...(causedBy ? { headers: { 'x-everdict-caused-by': causedBy } } : {}),
    });
    const id = (data as Created | undefined)?.run?.id;
    if (!id) throw new ClientError('bad_response', 200, 'POST /runs answered without a run');
    this.made.push(id);
    return id;
  }

  /** 1. An experiment of 20 eval runs (a harness defined here), scored, then re-scored. */
  async experiment(): Promise<void> {
    this.say('== 1. experiment: 20 eval runs, scored and re-scored');
    await this.ctx.call('POST', '/harnesses', {
      id: 'demo-echo',
      version: '2',
      image: 'default',
      // A harness reads case.json and writes out/outputs.json ({summary?, result?, exitCode?}).
      command: [
        'sh',
        '-c',
        'mkdir -p out && printf \'{"summary":"answer=42","result":{"case":%s,"answer":42},"exitCode":0}\' "$(cat case.json)" > out/outputs.json',
      ],
    });
    const evalSpec = {
      kind: 'eval',
      subject: {
        harness: { id: 'demo-echo', version: '2' },
        caseId: 'case-1',
        caseSpec: { q: 'six times seven' },
      },
    };
    let spec: unknown = evalSpec;
    try {
      await this.ctx
        .call('POST', '/groups', { kind: 'experiment', label: 'probe', repeat: 1, spec: evalSpec })
        .then((g) => this.made.push(...((g as { runs: { id: string }[] }).runs ?? []).map((r) => r.id)));
    } catch (e) {
      if (!isRefusal(e, 422)) throw e;
      this.say(
        `   eval runs refused here (${e.code}: no runner executes eval in this stack); using analysis runs`,
      );
      this.skipped.push('eval runs (no executor for eval: start with the embedded runner)');
      spec = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'answer=42', value: 42 } } };
    }
    const created = await this.ctx.call<{ group: GroupSummary; runs: { id: string }[] }>('POST', '/groups', {
      kind: 'experiment',
      label: 'demo: 20 cases',
      repeat: 20,
      spec,
    });
    this.made.push(...created.runs.map((r) => r.id));
    const g = await waitGroup(this.ctx, created.group.id, {
      progress: true,
      ...(this.ctx.io.signal ? { signal: this.ctx.io.signal } : {}),
    });
    checkpoint(this.ctx, `while ${g.id} ran (not scored)`);
    this.say(`   group ${g.id}: ${g.rollup.status} ${JSON.stringify(g.rollup.byStatus)}`);
    const { scoring: first } = await scoreGroup(this.ctx, g.id, [
      { type: 'exit_code' },
      { name: 'answer', type: 'output_regex', pattern: 'answer=42' },
    ]);
    this.say(`   scoring ${first.id}`);
    for (const l of scoreTable(first).split('\n')) this.say(`     ${l}`);
    const { scoring: second } = await scoreGroup(
      this.ctx,
      g.id,
      [{ name: 'judged', type: 'judge', judgeId: 'keywords', rubric: 'answer 42' }],
      first.id,
    );
    this.say(`   re-scoring ${second.id} (rescoreOf ${second.rescoreOf ?? first.id}); the first scores stay`);
    for (const l of scoreTable(second).split('\n')) this.say(`     ${l}`);
    if (g.rollup.status !== 'succeeded')
      throw new CliError('run_failed', `the experiment ended ${g.rollup.status}`);
  }

  /** 2. A causal tree (root → child → grandchild), cancelled at the root in one cascade. */
  async cascade(): Promise<void> {
    this.say('== 2. cascade cancel: root → child → grandchild, cancel the root');
    const root = await this.create(SLEEP(60_000));
    const child = await this.create(SLEEP(60_000), root);
    const grandchild = await this.create(SLEEP(60_000), child);
    const res = await this.ctx.call<{ run: { status: string }; cancelled: string[] }>(
      'POST',
      `/runs/${root}/cancel`,
      { reason: 'demo' },
    );
    this.say(`   cancelled ${res.cancelled.length} run(s): ${res.cancelled.join(', ')}`);
    for (const id of [root, child, grandchild]) {
      const run = await waitTerminal(this.ctx, id);
      this.say(`   ${id} ${run.status}`);
      if (run.status !== 'cancelled')
        throw new CliError('run_failed', `${id} is ${run.status}, not cancelled`);
    }
  }

  /** 3. An envelope capped at 3 runs: the root and two children fit, the third child is refused 402. */
  async envelope(): Promise<void> {
    this.say('== 3. envelope: a root opens an envelope of 3 runs, then fans out');
    const root = await this.create({ ...SLEEP(30_000), envelope: { capRuns: 3 } });
    const children: string[] = [];
    let refused: ClientError | undefined;
    for (let i = 0; i < 5 && !refused; i++) {
      try {
        children.push(await this.create(SLEEP(100), root));
      } catch (e) {
        if (!isRefusal(e)) throw e;
        refused = e;
      }
    }
    this.say(`   admitted ${children.length} child run(s) under ${root}`);
    if (!refused) throw new CliError('run_failed', 'the envelope never refused the fan-out');
    this.say(
      `   refused: ${refused.status} ${refused.code}${refused.problem?.rule ? ` (rule ${refused.problem.rule})` : ''}`,
    );
    const envelopes = await this.ctx.call<{ items: unknown[] }>('GET', '/envelopes').catch(() => null);
    if (envelopes) this.say(`   GET /envelopes lists ${envelopes.items.length} envelope(s)`);
    await this.ctx.call('POST', `/runs/${root}/cancel`, { reason: 'demo done' });
  }

  /**
   * 4. An agent conversation: the turn is queued for an agent service (`everdict-agent serve`, which
   * `everdict start` runs with a scripted model that asks for approval). The turn parks as a transcript
   * (`awaiting_input`); the demo lists what it waits on (`GET /runs/:id/input`, each call with its id),
   * approves it (`POST /runs/:id/input`), and the turn resumes and finishes; its record must account the
   * park `non_blocking`. Without an agent service leasing turns within 30 s the step says so and cancels.
   */
  async agent(): Promise<void> {
    this.say('== 4. agent conversation: a turn parks for an approval and resumes');
    try {
      const created = await this.ctx.call<{ agent: { id: string } }>('POST', '/agents', {
        name: `releaser-${Date.now().toString(36)}`,
        model: 'scripted-demo',
        systemPrompt: 'You ship releases, and ask before you do.',
        tools: ['ask_approval'],
        envelope: { runs: 5 },
        enabled: true,
      });
      const conv = await this.ctx.call<{ group: { id: string } }>('POST', '/conversations', {
        agentId: created.agent.id,
      });
      const turn = await this.ctx.call<{ run: { id: string } }>(
        'POST',
        `/conversations/${conv.group.id}/messages`,
        { text: 'Release 1.4.0 please.' },
      );
      const runId = turn.run.id;
      this.say(`   conversation ${conv.group.id}: turn ${runId} queued`);
      const seen = await waitStatus(this.ctx, runId, (s) => s !== 'queued', 30_000).catch((e: unknown) => {
        if (e instanceof CliError && e.code === 'interrupted') throw e;
        return null;
      });
      if (!seen) {
        await this.ctx.call('POST', `/runs/${runId}/cancel`, { reason: 'no agent service' });
        this.say(
          '   skipped: no agent service leased the turn within 30 s (run `everdict start`); turn cancelled',
        );
        this.skipped.push('agent conversation (no agent service leasing turns)');
        return;
      }
      this.made.push(runId);
      const after = await waitStatus(this.ctx, runId, (s) => s === 'awaiting_input' || TERMINAL.has(s));
      if (after.status !== 'awaiting_input') {
        this.say(`   turn ${runId}: ${after.status} without asking for anything (no park to show)`);
        if (after.status !== 'succeeded')
          throw new CliError('run_failed', `turn ${runId} ended ${after.status}`);
        this.skipped.push('agent park (the model finished without a tool call to wait on)');
        return;
      }
      this.say(`   turn ${runId}: awaiting_input — parked as its transcript; no agent process holds it`);
      const pending = await pendingInput(this.ctx, runId);
      for (const p of pending) this.say(`   waiting: ${describePending(p)}`);
      const approvals = pending.filter((p) => p.kind === 'approval');
      if (approvals.length === 0)
        throw new CliError('run_failed', `turn ${runId} is parked but waits on no approval`);
      for (const a of approvals) {
        await answer(this.ctx, runId, a.callId, true, 'approved by the demo');
        this.say(`   approved ${a.callId} (POST /runs/${runId}/input)`);
      }
      const done = await waitTerminal(this.ctx, runId);
      const summary = (done as { outputs?: { summary?: string } }).outputs?.summary;
      this.say(`   turn ${runId}: ${done.status}${summary ? ` — "${summary}"` : ''}`);
      if (done.status !== 'succeeded') throw new CliError('run_failed', `turn ${runId} ended ${done.status}`);
      const verified = await verifyRun(this.ctx, runId);
      const v = verified.verdict;
      if (!v.ok) throw new CliError('not_verified', `turn ${runId}: ${v.error}`);
      if (!verified.binds) throw new CliError('not_verified', `turn ${runId}: the record is not this run's`);
      this.say(
        `   record: ${v.phase}, account ${v.account}, idle ${v.cost.idle_uj} µJ while parked (estimated)`,
      );
      if (v.account !== 'non_blocking')
        throw new CliError('run_failed', `turn ${runId}'s record accounts ${v.account}, not non_blocking`);
    } catch (e) {
      if (!missingRoute(e)) throw e;
      this.say('   skipped: this control plane has no agent routes (POST /agents → 404 route_not_found)');
      this.skipped.push('agent conversation (no agent routes)');
    }
  }

  /** 5. A sandbox session (when the sessions routes exist): open, exec, a terminal, close. */
  async sandbox(): Promise<void> {
    this.say('== 5. sandbox session: open, exec, a terminal, close');
    try {
      const opened = await this.ctx.call<{ run?: { id: string }; id?: string }>('POST', '/sandboxes', {
        image: 'default',
        ttlSec: 600,
        idleTimeoutSec: 300,
      });
      const id = opened.run?.id ?? opened.id ?? '';
      this.made.push(id);
      const r = await this.ctx.call<{ exitCode?: number; stdout?: string }>('POST', `/sandboxes/${id}/exec`, {
        command: ['sh', '-c', 'echo hello from $(hostname)'],
      });
      this.say(`   exec → exit ${r.exitCode}: ${(r.stdout ?? '').trim()}`);
      if (r.exitCode !== 0) throw new CliError('run_failed', `the exec in ${id} exited ${r.exitCode}`);
      await this.terminal(id);
      await this.ctx.call('POST', `/sandboxes/${id}/close`, {});
      this.say(`   ${id} closed`);
    } catch (e) {
      if (!missingRoute(e)) throw e;
      this.say(
        '   skipped: this control plane has no sessions routes yet (POST /sandboxes → 404 route_not_found)',
      );
      this.skipped.push('sandbox session (no sessions routes)');
    }
  }

  /**
   * A terminal into the session, as `everdict sandbox shell` opens it (ticket, then the WebSocket), typed
   * into from a pipe: the expansion runs remotely, so its result (42) is not in what was typed.
   */
  async terminal(id: string): Promise<void> {
    const stdin = new PassThrough();
    const stdout = new Collector();
    const io: Io = { ...this.ctx.io, stdin, stdout };
    stdin.end('echo terminal-$((6*7))\nexit 0\n');
    const code = await openShell({ ...this.ctx, io }, id);
    const shown = /terminal-42/.test(stdout.text);
    this.say(`   terminal → exit ${code}: ${shown ? 'terminal-42' : '(no output)'}`);
    if (code !== 0 || !shown)
      throw new CliError(
        'run_failed',
        `the terminal of ${id} exited ${code}${shown ? '' : ' without its output'}`,
      );
  }

  /**
   * Every record this demo made, verified here from genesis; a record that carries signatures is verified
   * again trusting only the keys GET /keys lists (every interval bundled and signed by one of them). A
   * record with no signature at all is counted as unattested and named — it verifies, but nobody signed it.
   */
  async verifyAll(): Promise<number> {
    this.say(`== verify: ${this.made.length} records, locally; signed ones against the listed signer keys`);
    let bad = 0;
    const unattested: string[] = [];
    const signers = new Map<string, number>();
    for (const id of this.made) {
      const plain = await verifyRun(this.ctx, id);
      const r =
        plain.ok && plain.signers.length > 0 ? await verifyRun(this.ctx, id, { trustListed: true }) : plain;
      if (!r.ok) {
        bad++;
        for (const l of describeVerdict(r)) this.say(`   ${l}`);
        continue;
      }
      if (r.signers.length === 0) unattested.push(id);
      for (const s of r.signers) {
        const who = `${s.kind} ${s.key.slice(0, 16)}…`;
        signers.set(who, (signers.get(who) ?? 0) + 1);
      }
    }
    this.say(`   ${this.made.length - bad} verified, ${bad} did not`);
    for (const [who, n] of signers)
      this.say(`   signed by ${who}: ${n} record(s), each verified trusting only that key`);
    if (unattested.length > 0)
      this.say(
        `   unattested (chain verifies, no interval signed): ${unattested.length} — ${unattested.slice(0, 3).join(', ')}${unattested.length > 3 ? ', …' : ''}`,
      );
    return bad;
  }
}

async function waitStatus(ctx: Context, id: string, ok: (status: string) => boolean, ms = 120_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const run = await getRun(ctx, id);
    if (ok(run.status)) return run;
    if (ctx.io.signal?.aborted)
      throw new CliError('interrupted', `stopped the demo: ${id} is still ${run.status}`);
    if (Date.now() > deadline) throw new CliError('run_failed', `${id} is still ${run.status}`);
    await pause(200, ctx.io.signal);
  }
}

/** Ctrl-C between (or inside) steps stops the demo: exit 130, nothing claimed about what it left running. */
function checkpoint(ctx: Context, where: string): void {
  if (ctx.io.signal?.aborted) throw new CliError('interrupted', `stopped the demo ${where}`);
}
const waitTerminal = (ctx: Context, id: string) => waitStatus(ctx, id, (s) => TERMINAL.has(s));

export async function demoCommand(ctx: Context): Promise<number> {
  const demo = new Demo(ctx);
  demo.say(`against ${ctx.url}`);
  const steps = [
    () => demo.experiment(),
    () => demo.cascade(),
    () => demo.envelope(),
    () => demo.agent(),
    () => demo.sandbox(),
  ];
  for (const step of steps) {
    checkpoint(ctx, 'between its steps');
    await step();
  }
  checkpoint(ctx, 'before verifying');
  const bad = await demo.verifyAll();
  if (demo.skipped.length > 0) demo.say(`not shown here: ${demo.skipped.join('; ')}`);
  if (bad > 0) throw new CliError('not_verified', `${bad} record(s) did not verify`);
  demo.say('demo: every record verified');
  return EXIT.ok;
}

export function registerDemo(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('demo')
    .description('the demo against the running main job; exit 0 only if every record it made verifies')
    .action(() => done(demoCommand(ctx())));
}
