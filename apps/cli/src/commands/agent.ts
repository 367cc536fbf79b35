// everdict agent chat <agent> — a conversation with an agent over the agent routes (`POST /conversations`,
// `POST /conversations/:id/messages`, `POST /runs/:id/input`). Each message is a turn (a run); the CLI
// tails its trajectory, and when the turn parks awaiting input (an approval), asks y/n and answers it.
// Thin by design: the agent service and the control plane own the loop.
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { collect } from './options.js';
import { followTrajectory, getRun, TERMINAL } from './watch.js';

interface Turn {
  run?: { id: string; status: string };
  runId?: string;
}

export async function sendMessage(ctx: Context, conversationId: string, text: string): Promise<string> {
  const t = await ctx.call<Turn>('POST', `/conversations/${encodeURIComponent(conversationId)}/messages`, {
    text,
  });
  const id = t.run?.id ?? t.runId;
  if (!id) throw new CliError('unavailable', 'the message was taken but no turn came back');
  return id;
}

/** Follows a turn until it settles or parks; returns its status. */
export async function followTurn(ctx: Context, runId: string): Promise<string> {
  const stop = new AbortController();
  const tail = followTrajectory(ctx, runId, stop.signal);
  for (;;) {
    const run = await getRun(ctx, runId);
    if (TERMINAL.has(run.status) || run.status === 'awaiting_input' || ctx.io.signal?.aborted) {
      setTimeout(() => stop.abort(), 1_000);
      await tail;
      return run.status;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

export async function chat(
  ctx: Context,
  agentId: string,
  o: { message?: string[]; approve?: boolean; conversation?: string },
): Promise<number> {
  const conversationId =
    o.conversation ??
    (await ctx.call<{ id?: string; conversation?: { id: string } }>('POST', '/conversations', { agentId }))
      .conversation?.id;
  if (!conversationId) throw new CliError('unavailable', 'no conversation id came back');
  line(ctx.io.stderr, `conversation ${conversationId}`);
  const scripted = o.message !== undefined;
  const rl = scripted ? null : createInterface({ input: ctx.io.stdin, output: ctx.io.stderr });
  try {
    for (let i = 0; ; i++) {
      const text = scripted ? o.message?.[i] : await rl?.question('> ').catch(() => undefined);
      if (text === undefined || text === '/exit') return 0;
      let runId = await sendMessage(ctx, conversationId, text);
      for (;;) {
        const status = await followTurn(ctx, runId);
        if (status !== 'awaiting_input') {
          line(ctx.io.stderr, `${runId} ${status}`);
          if (status !== 'succeeded') throw new CliError('run_failed', `${runId} ended ${status}`);
          break;
        }
        const approved = scripted
          ? o.approve === true
          : /^y/i.test((await rl?.question('approve? [y/N] ')) ?? '');
        await ctx.call('POST', `/runs/${encodeURIComponent(runId)}/input`, { approved });
        runId = (await getRun(ctx, runId)).id;
      }
    }
  } finally {
    rl?.close();
  }
}

export function registerAgent(program: Command, ctx: () => Context, done: Done): void {
  const agent = program.command('agent').description('agents');
  agent
    .command('chat')
    .description('a conversation: each message is a turn; parked approvals are asked here')
    .argument('<agent>', 'the agent id')
    .option('--conversation <id>', 'continue this conversation')
    .option('-m, --message <text>', 'send this instead of reading stdin (repeatable)', collect)
    .option('--approve', 'with --message: approve every parked request (default: deny)')
    .action((agentId: string, o: { message?: string[]; approve?: boolean; conversation?: string }) =>
      done(chat(ctx(), agentId, o)),
    );
}
