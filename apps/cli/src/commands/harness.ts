// everdict harness define <id@version> [--image REF] -- argv… — define an eval harness version (POST /harnesses;
// versions are immutable: the same definition again is a no-op, a different one 409).
// everdict harness list — the tenant's harnesses (GET /harnesses).
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { table } from '../table.js';

interface Harness {
  id: string;
  version: string;
  image: string;
  command: string[];
}

/** `id@version` → its parts (the last `@` splits, so an id may hold one). */
export function harnessRef(text: string): { id: string; version: string } {
  const at = text.lastIndexOf('@');
  if (at <= 0 || at === text.length - 1) throw new CliError('usage', '--harness is ID@VERSION');
  return { id: text.slice(0, at), version: text.slice(at + 1) };
}

export async function defineHarness(
  ctx: Context,
  ref: string,
  argv: readonly string[],
  o: { image?: string; json?: boolean },
): Promise<number> {
  if (argv.length === 0) throw new CliError('usage', 'harness define: give its command after `--`');
  const { id, version } = harnessRef(ref);
  const { data, response } = await ctx.client.POST('/harnesses', {
    body: { id, version, image: o.image ?? 'default', command: [...argv] } as never,
  });
  const harness = data as unknown as Harness;
  if (o.json) line(ctx.io.stdout, JSON.stringify(harness));
  else
    line(
      ctx.io.stdout,
      `harness ${harness.id}@${harness.version} ${response.status === 201 ? 'defined' : 'already defined, identically'}`,
    );
  return 0;
}

export async function listHarnesses(ctx: Context, o: { json?: boolean }): Promise<number> {
  const { items } = await ctx.call<{ items: Harness[] }>('GET', '/harnesses');
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else
    line(
      ctx.io.stdout,
      table(
        ['harness', 'image', 'command'],
        items.map((h) => [`${h.id}@${h.version}`, h.image, JSON.stringify(h.command)]),
      ),
    );
  return 0;
}

export function registerHarness(program: Command, ctx: () => Context, done: Done): void {
  const harness = program
    .command('harness')
    .description(
      'eval harnesses: a versioned image + command that reads case.json ({runId, caseId, caseSpec}) and writes out/outputs.json ({summary?, result?, exitCode?})',
    );
  harness
    .command('define')
    .description('define a harness version (immutable: the same definition again is a no-op, another is 409)')
    .argument('<id@version>', 'the harness and its version')
    .argument('<argv...>', 'its command (after --)')
    .option('--image <ref>', 'its image (default: default)')
    .option('--json', 'print JSON')
    .action((ref: string, argv: string[], o: { image?: string; json?: boolean }) =>
      done(defineHarness(ctx(), ref, argv, o)),
    );
  harness
    .command('list')
    .description("the tenant's harnesses")
    .option('--json', 'print JSON')
    .action((o: { json?: boolean }) => done(listHarnesses(ctx(), o)));
}
