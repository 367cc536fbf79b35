// everdict artifact <run> [path] [-o FILE] — the files a run's command left under `out/`: without a path, the
// run's list (`outputs.artifacts`); with one, its bytes (`GET /runs/:id/artifact?path=`) to stdout or FILE,
// hashed as they arrive and checked against the address the run lists. FILE appears only once its bytes are
// whole and verified (written beside it, then renamed); bytes that do not match are `not_verified` (exit 1).

import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { errorFromResponse } from '@everdict/client';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Command } from 'commander';
import { type Context, callSignal, type Done } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { table } from '../table.js';

interface Artifact {
  name: string;
  uri: string;
  bytes?: number;
  digest?: string;
}

async function listed(ctx: Context, runId: string): Promise<Artifact[]> {
  const run = await ctx.call<{ outputs?: { artifacts?: Artifact[] } }>(
    'GET',
    `/runs/${encodeURIComponent(runId)}`,
  );
  return run.outputs?.artifacts ?? [];
}

/** Where the bytes go: stdout, or a file beside FILE renamed onto it once verified. */
function destination(ctx: Context, out: string | undefined) {
  if (out === undefined || out === '-')
    return { stream: ctx.io.stdout, keep: () => undefined, discard: () => undefined, owned: false };
  const partial = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString('hex')}.partial`);
  const stream = createWriteStream(partial, { flags: 'wx' });
  return {
    stream,
    keep: () => renameSync(partial, out),
    discard: () => rmSync(partial, { force: true }),
    owned: true,
  };
}

async function download(ctx: Context, runId: string, path: string, out: string | undefined): Promise<number> {
  const entry = (await listed(ctx, runId)).find((a) => a.name === path);
  if (!entry)
    throw new CliError(
      'refused',
      `run ${runId} lists no artifact ${JSON.stringify(path)} (everdict artifact ${runId} lists them)`,
    );
  const expected = entry.uri.replace(/^artifact:/, '');
  const signal = callSignal(ctx.io.env, ctx.io.signal);
  let res: Response;
  try {
    res = await fetch(
      `${ctx.url}/runs/${encodeURIComponent(runId)}/artifact?path=${encodeURIComponent(path)}`,
      { headers: ctx.key ? { authorization: `Bearer ${ctx.key}` } : {}, signal },
    );
  } catch (e) {
    signal.clear();
    throw new CliError('unavailable', `no answer from the control plane: ${(e as Error).message}`);
  }
  signal.clear();
  // A refusal's problem document, reported as every other command reports it.
  if (!res.ok) throw errorFromResponse(res, await res.json().catch(() => undefined));
  if (!res.body) throw new CliError('unavailable', `HTTP ${res.status} without a body`);
  const dest = destination(ctx, out);
  const hasher = blake3.create();
  let size = 0;
  try {
    for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
      hasher.update(piece);
      size += piece.length;
      if (!dest.stream.write(piece)) await once(dest.stream, 'drain');
    }
  } catch (e) {
    if (dest.owned) dest.stream.end();
    dest.discard();
    throw new CliError(
      'not_verified',
      `${path}: the bytes broke off after ${size} of ${entry.bytes ?? '?'} (the control plane found them altered, or the connection dropped)${dest.owned ? '; nothing written' : ''}: ${(e as Error).message}`,
    );
  }
  if (dest.owned) {
    dest.stream.end();
    await once(dest.stream, 'close');
  }
  const got = `blake3:${bytesToHex(hasher.digest())}`;
  if (got !== expected) {
    dest.discard();
    throw new CliError(
      'not_verified',
      `${path}: the bytes hash to ${got}, the run lists ${expected}${dest.owned ? '; nothing written' : ''}`,
    );
  }
  dest.keep();
  if (out !== undefined && out !== '-') line(ctx.io.stderr, `${out}: ${size} bytes, ${got} (verified)`);
  return 0;
}

export async function artifactCommand(
  ctx: Context,
  runId: string,
  path: string | undefined,
  o: { output?: string; json?: boolean },
): Promise<number> {
  if (path !== undefined) {
    if (o.json)
      throw new CliError('usage', 'artifact: --json lists; with a path the bytes are printed (or -o FILE)');
    return download(ctx, runId, path, o.output);
  }
  if (o.output !== undefined) throw new CliError('usage', 'artifact: -o FILE needs the artifact path');
  const items = await listed(ctx, runId);
  if (o.json) line(ctx.io.stdout, JSON.stringify(items));
  else if (items.length === 0) line(ctx.io.stderr, `run ${runId} lists no artifacts`);
  else
    line(
      ctx.io.stdout,
      table(
        ['path', 'bytes', 'address'],
        items.map((a) => [a.name, String(a.bytes ?? ''), a.uri.replace(/^artifact:/, '')]),
      ),
    );
  return 0;
}

export function registerArtifact(program: Command, ctx: () => Context, done: Done): void {
  program
    .command('artifact')
    .description(
      "a run's artifacts (the files its command left under out/): list them, or fetch one, verified",
    )
    .argument('<run>', 'the run id')
    .argument('[path]', "an artifact's path (as listed); without it, the list")
    .option('-o, --output <file>', 'write the bytes to FILE (only once whole and verified); default stdout')
    .option('--json', 'print the list as JSON')
    .action((runId: string, path: string | undefined, o: { output?: string; json?: boolean }) =>
      done(artifactCommand(ctx(), runId, path, o)),
    );
}
