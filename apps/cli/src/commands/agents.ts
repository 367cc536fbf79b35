// everdict agent define <name> --model M [--system TEXT | --system-file FILE] [--tool T]… [--envelope-runs N]
// [--envelope-usd X] [--max-steps N] [--disabled] — register an agent (POST /agents, version 1), so that
// `agent chat <id>` has one to talk to; everdict agent list — the tenant's agents (GET /agents).
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { table } from '../table.js';
import { collect } from './options.js';

/** The tools an agent may be given (the control plane's `POST /agents` enum; it refuses any other, 400). */
export const AGENT_TOOLS = ['run_command', 'start_experiment', 'read_run', 'ask_approval'] as const;
type AgentTool = (typeof AGENT_TOOLS)[number];

interface DefineOptions {
  model?: string;
  system?: string;
  systemFile?: string;
  tool?: string[];
  envelopeRuns?: string;
  envelopeUsd?: string;
  maxSteps?: string;
  disabled?: boolean;
  json?: boolean;
}

function count(flag: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min)
    throw new CliError('usage', `${flag} is an integer ≥ ${min}`);
  return Number(text);
}

function usd(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new CliError('usage', '--envelope-usd is dollars ≥ 0');
  return n;
}

async function systemPrompt(o: DefineOptions): Promise<string | undefined> {
  if (o.system !== undefined && o.systemFile !== undefined)
    throw new CliError('usage', 'agent define: give --system or --system-file, not both');
  if (o.systemFile === undefined) return o.system;
  try {
    return await readFile(o.systemFile, 'utf8');
  } catch (e) {
    throw new CliError('usage', `--system-file ${o.systemFile}: ${(e as Error).message}`);
  }
}

function tools(names: readonly string[] | undefined): AgentTool[] {
  return (names ?? []).map((t) => {
    if (!(AGENT_TOOLS as readonly string[]).includes(t))
      throw new CliError('usage', `--tool ${t}: one of ${AGENT_TOOLS.join(', ')}`);
    return t as AgentTool;
  });
}

export async function defineAgent(ctx: Context, name: string, o: DefineOptions): Promise<number> {
  if (!o.model) throw new CliError('usage', 'agent define: give --model');
  // Every flag is checked before the call: a usage error creates nothing.
  const runs = count('--envelope-runs', o.envelopeRuns, 0);
  const dollars = usd(o.envelopeUsd);
  const maxStepsPerInterval = count('--max-steps', o.maxSteps, 1);
  const prompt = await systemPrompt(o);
  const { data } = await ctx.client.POST('/agents', {
    body: {
      name,
      model: o.model,
      tools: tools(o.tool),
      enabled: !o.disabled,
      envelope: {
        ...(runs === undefined ? {} : { runs }),
        ...(dollars === undefined ? {} : { usd: dollars }),
      },
      ...(prompt === undefined ? {} : { systemPrompt: prompt }),
      ...(maxStepsPerInterval === undefined ? {} : { maxStepsPerInterval }),
    },
  });
  const agent = data!.agent;
  if (o.json) line(ctx.io.stdout, JSON.stringify(agent));
  else
    line(
      ctx.io.stdout,
      `agent ${agent.id} (${agent.name}) version ${agent.version} defined${agent.enabled ? '' : ', disabled'}; talk to it: everdict agent chat ${agent.id}`,
    );
  return 0;
}

export async function listAgents(ctx: Context, o: { json?: boolean }): Promise<number> {
  const { data } = await ctx.client.GET('/agents');
  const items = data!.items;
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else
    line(
      ctx.io.stdout,
      table(
        ['agent', 'name', 'version', 'model', 'tools', 'enabled'],
        items.map((a) => [
          a.id,
          a.name,
          String(a.version),
          a.model,
          a.tools.join(',') || '-',
          a.enabled ? 'yes' : 'no',
        ]),
      ),
    );
  return 0;
}

export function registerAgentDefinitions(agent: Command, ctx: () => Context, done: Done): void {
  agent
    .command('define')
    .description('register an agent (version 1) for `agent chat`')
    .argument('<name>', 'its name')
    .option(
      '--model <model>',
      "the model it calls (required; the agent service's scripted model answers unless EVERDICT_MODEL_BASE_URL names a real one)",
    )
    .option('--system <text>', 'its system prompt')
    .option('--system-file <file>', 'its system prompt, from a file')
    .option('--tool <tool>', `a tool it may call (repeatable): ${AGENT_TOOLS.join(', ')}`, collect)
    .option('--envelope-runs <n>', 'each turn may cause at most n runs (the turn itself counted once)')
    .option('--envelope-usd <x>', 'each turn may spend at most x dollars')
    .option('--max-steps <n>', 'model calls one turn interval may make (default 16)')
    .option('--disabled', 'registered but not activated')
    .option('--json', 'print JSON')
    .action((name: string, o: DefineOptions) => done(defineAgent(ctx(), name, o)));
  agent
    .command('list')
    .description("the tenant's agents")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => done(listAgents(ctx(), o)));
}
