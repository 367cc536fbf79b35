// everdict agent chat <agent> — a conversation with an agent over the agent routes (`POST /conversations`,
// `POST /conversations/:id/messages`, `GET` + `POST /runs/:id/input`). Each message is a turn (a run); the
// CLI tails its trajectory, and when the turn parks awaiting input it lists what the turn waits on
// (`GET /runs/:id/input`: each pending call with its id) and asks y/n for each approval, answering it by its
// call id. A turn waiting only on caused runs (or an experiment) is followed until it resumes.
// The conversation reads as one (chat-view.ts): the assistant's words, its tool calls and their results, each
// event once — a turn resumed after a park goes on where its tail stopped.
// Thin by design: the agent service and the control plane own the loop.
import { createInterface } from 'node:readline/promises';
import { anySignal } from 'any-signal';
import type { Command } from 'commander';
import { pause } from '../backoff.js';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { registerAgentHosts } from './agent-hosts.js';
import { registerAgentDefinitions } from './agents.js';
import { chatPrinter } from './chat-view.js';
import { collect } from './options.js';
import { eventPrinter, followTrajectory, getRun, TERMINAL } from './watch.js';

interface ChatOptions {
  message?: string[];
  approve?: boolean;
  conversation?: string;
  json?: boolean;
}

interface Turn {
  run?: { id: string; status: string };
  runId?: string;
}

/** One call a parked turn waits on (`GET /runs/:id/input`). */
export interface PendingCall {
  callId: string;
  kind: 'approval' | 'run' | 'experiment';
  tool: string;
  prompt?: string;
  runId?: string;
  groupId?: string;
  waitingOn?: string[];
  since: string;
}

/** What a parked turn waits on, each call with its id (the turn's creator or an admin may ask). */
export async function pendingInput(ctx: Context, runId: string): Promise<PendingCall[]> {
  const r = await ctx.call<{ pending: PendingCall[] }>('GET', `/runs/${encodeURIComponent(runId)}/input`);
  return r.pending;
}

export function describePending(p: PendingCall): string {
  if (p.kind === 'approval') return `${p.callId} approval: ${p.prompt ?? '(no question)'}`;
  if (p.kind === 'run') return `${p.callId} ${p.tool}: waits on run ${p.runId}`;
  return `${p.callId} ${p.tool}: waits on group ${p.groupId} (${p.waitingOn?.length ?? 0} run(s) unsettled)`;
}

/** Answer one pending approval by its call id. */
export async function answer(
  ctx: Context,
  runId: string,
  callId: string,
  approved: boolean,
  note?: string,
): Promise<void> {
  await ctx.call('POST', `/runs/${encodeURIComponent(runId)}/input`, {
    callId,
    approved,
    ...(note !== undefined ? { note } : {}),
  });
}

export async function sendMessage(ctx: Context, conversationId: string, text: string): Promise<string> {
  const t = await ctx.call<Turn>('POST', `/conversations/${encodeURIComponent(conversationId)}/messages`, {
    text,
  });
  const id = t.run?.id ?? t.runId;
  if (!id) throw new CliError('unavailable', 'the message was taken but no turn came back');
  return id;
}

/** Where a turn's trajectory has been shown up to, kept across its parks: a resumed turn goes on from there. */
export interface TurnTail {
  readonly print: (ev: Record<string, unknown>) => void;
  offset: number;
}

/**
 * Follows a turn until it settles or parks; returns its status. Its trajectory is shown from `tail.offset` on,
 * which moves past what was shown (a resumed turn's tail shows nothing twice). The tail is closed on every way
 * out.
 */
export async function followTurn(ctx: Context, runId: string, tail: TurnTail): Promise<string> {
  const stop = new AbortController();
  const following = followTrajectory(ctx, runId, stop.signal, eventPrinter(ctx, tail.print), tail.offset);
  let grace: NodeJS.Timeout | undefined;
  try {
    for (;;) {
      const run = await getRun(ctx, runId);
      if (TERMINAL.has(run.status) || run.status === 'awaiting_input' || ctx.io.signal?.aborted) {
        grace = setTimeout(() => stop.abort(), 1_000);
        return run.status;
      }
      await pause(300, ctx.io.signal);
    }
  } finally {
    if (grace === undefined) stop.abort();
    tail.offset = await following;
    clearTimeout(grace);
  }
}

/**
 * The agent a chat names: an id (`agent_…`) as it is; a name, the tenant's one agent of that name (`GET /agents`) —
 * none is refused naming `agent list`, several is a usage error naming their ids.
 */
export async function resolveAgent(ctx: Context, ref: string): Promise<string> {
  if (/^agent_/.test(ref)) return ref;
  const { data } = await ctx.client.GET('/agents');
  const named = (data?.items ?? []).filter((a) => a.name === ref);
  if (named.length === 1) return named[0]!.id;
  if (named.length === 0)
    throw new CliError('refused', `no agent named ${JSON.stringify(ref)} (everdict agent list names them)`);
  throw new CliError(
    'usage',
    `${named.length} agents are named ${JSON.stringify(ref)}: give one's id (${named.map((a) => a.id).join(', ')})`,
  );
}

export async function chat(ctx: Context, agentRef: string, o: ChatOptions): Promise<number> {
  const print = chatPrinter(ctx, o.json === true);
  const conversationId =
    o.conversation ??
    (
      await ctx.call<{ group?: { id: string } }>('POST', '/conversations', {
        agentId: await resolveAgent(ctx, agentRef),
      })
    ).group?.id;
  if (!conversationId) throw new CliError('unavailable', 'no conversation id came back');
  line(ctx.io.stderr, `conversation ${conversationId}`);
  const scripted = o.message !== undefined;
  const rl = scripted ? null : createInterface({ input: ctx.io.stdin, output: ctx.io.stderr });
  // On a terminal, readline takes Ctrl-C itself (raw mode): without a listener it only pauses the input and
  // the prompt waits forever. Here it ends the prompt as `interrupted` (130), like Ctrl-C anywhere else.
  // The end of input closes the interface, which on Node 20 does not settle a pending question (the process
  // would end on an unsettled await, exit 13): the question is aborted then too, and answers undefined.
  const atPrompt = new AbortController();
  const ended = new AbortController();
  rl?.on('SIGINT', () => atPrompt.abort());
  rl?.on('close', () => ended.abort());
  // Joined for this command, cleared when it ends (below).
  const interrupt = anySignal([ctx.io.signal, atPrompt.signal]);
  const signal = anySignal([interrupt, ended.signal]);
  /** A line typed at the prompt; undefined at end of input. */
  const ask = async (prompt: string): Promise<string | undefined> => {
    const text = await rl?.question(prompt, { signal }).catch(() => undefined);
    if (interrupt.aborted)
      throw new CliError('interrupted', `stopped at the prompt of conversation ${conversationId}`);
    return text;
  };
  try {
    for (let i = 0; ; i++) {
      const text = scripted ? o.message?.[i] : await ask('> ');
      if (text === undefined || text === '/exit') return 0;
      const runId = await sendMessage(ctx, conversationId, text);
      line(ctx.io.stderr, `turn ${runId}`);
      const answered = new Set<string>();
      const tail: TurnTail = { print, offset: 0 };
      for (;;) {
        const status = await followTurn(ctx, runId, tail);
        if (ctx.io.signal?.aborted && !TERMINAL.has(status))
          throw new CliError('interrupted', `stopped following: ${runId} is still ${status}`);
        if (status !== 'awaiting_input') {
          line(ctx.io.stderr, `${runId} ${status}`);
          if (status !== 'succeeded') throw new CliError('run_failed', `${runId} ended ${status}`);
          break;
        }
        const pending = await pendingInput(ctx, runId);
        for (const p of pending) line(ctx.io.stderr, `waiting: ${describePending(p)}`);
        const approvals = pending.filter((p) => p.kind === 'approval' && !answered.has(p.callId));
        for (const a of approvals) {
          const approved = scripted
            ? o.approve === true
            : /^y/i.test((await ask(`approve ${a.callId}? [y/N] `)) ?? ''); // end of input: N
          await answer(ctx, runId, a.callId, approved);
          answered.add(a.callId);
          line(ctx.io.stderr, `${a.callId} ${approved ? 'approved' : 'denied'}`);
        }
        // The turn resumes when EVERY call has its result; until then it stays awaiting_input.
        await waitWhileParked(ctx, runId, answered);
        if (ctx.io.signal?.aborted)
          throw new CliError('interrupted', `stopped following: ${runId} is still parked`);
      }
    }
  } finally {
    rl?.close();
    signal.clear();
    interrupt.clear();
  }
}

/**
 * Until the turn leaves `awaiting_input` (an agent process resumed it), or parks again on an approval not
 * answered here, or the user interrupts.
 */
async function waitWhileParked(ctx: Context, runId: string, answered: ReadonlySet<string>): Promise<void> {
  for (;;) {
    const run = await getRun(ctx, runId);
    if (run.status !== 'awaiting_input' || ctx.io.signal?.aborted) return;
    const pending = await pendingInput(ctx, runId);
    if (pending.some((p) => p.kind === 'approval' && !answered.has(p.callId))) return;
    await pause(300, ctx.io.signal);
  }
}

export function registerAgent(program: Command, ctx: () => Context, done: Done): void {
  const agent = program.command('agent').description('agents: define, list, chat; their hosts: list, revoke');
  registerAgentDefinitions(agent, ctx, done);
  registerAgentHosts(agent, ctx, done);
  agent
    .command('chat')
    .description(
      'a conversation: each message is a turn; what a parked turn waits on is listed, approvals asked here',
    )
    .argument('<agent>', 'the agent: its id, or its name when one agent of the tenant has it')
    .option('--conversation <id>', 'continue this conversation')
    .option('-m, --message <text>', 'send this instead of reading stdin (repeatable)', collect)
    .option('--approve', 'with --message: approve every parked request (default: deny)')
    .option('--json', "print each of the turns' trajectory events as stored, one JSON object a line")
    .action((agentId: string, o: ChatOptions) => done(chat(ctx(), agentId, o)));
}
