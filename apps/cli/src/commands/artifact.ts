// everdict artifact <run> [path] [-o FILE] [--dir DIR] — the files a run's command left under `out/`: without a
// path, the run's list (`outputs.artifacts`); `--dir` every one of them into DIR (the run's archive,
// `GET /runs/:id/artifacts.tar`, in one request); with a path, its bytes
// (`GET /runs/:id/artifact?path=`) to stdout or FILE, hashed as they arrive and checked against the address the
// run lists. FILE appears only once its bytes are whole and verified (written beside it, then renamed); bytes that
// do not match are `not_verified` (exit 1).

import { resolve, sep } from 'node:path';
import { errorFromResponse } from '@everdict/client';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { makeDirectories } from '../directories.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { table } from '../table.js';
import { fetchArchive, makeParent, type Target } from './artifact-archive.js';
import { type Artifact, type Destination, destination, fetchBody, receive } from './artifact-files.js';

async function listed(ctx: Context, runId: string): Promise<Artifact[]> {
  const { data } = await ctx.client.GET('/runs/{id}', { params: { path: { id: runId } } });
  return data?.outputs?.artifacts ?? [];
}

async function download(ctx: Context, runId: string, path: string, out: string | undefined): Promise<number> {
  // The file first: a path that cannot be written is a usage error before any call.
  const dest = destination(out);
  const entry = await listed(ctx, runId).then(
    (items) => items.find((a) => a.name === path),
    (e: unknown) => {
      dest?.discard();
      throw e;
    },
  );
  if (!entry) {
    dest?.discard();
    throw new CliError(
      'refused',
      `run ${runId} lists no artifact ${JSON.stringify(path)} (everdict artifact ${runId} lists them)`,
    );
  }
  return save(ctx, runId, entry, dest, out);
}

/** One listed artifact's bytes, by their own request, to `dest` (or stdout); kept only once verified. */
async function save(
  ctx: Context,
  runId: string,
  entry: Artifact,
  dest: Destination,
  out: string | undefined,
): Promise<number> {
  const { res, release } = await fetchBody(
    ctx,
    `/runs/${encodeURIComponent(runId)}/artifact?path=${encodeURIComponent(entry.name)}`,
  ).catch((e: unknown) => {
    dest?.discard();
    throw e;
  });
  try {
    // A refusal's problem document, reported as every other command reports it.
    if (!res.ok) throw errorFromResponse(res, await res.json().catch(() => undefined));
    if (!res.body) throw new CliError('unavailable', `HTTP ${res.status} without a body`);
  } catch (e) {
    dest?.discard();
    release();
    throw e;
  }
  try {
    await receive(ctx, entry, res.body as unknown as AsyncIterable<Uint8Array>, dest, out);
  } finally {
    release();
  }
  return 0;
}

/** Artifacts fetched at once each alone (no archive route): many small files pay a round trip each, not in turn. */
export const FETCHES_IN_FLIGHT = 8;

/**
 * Every artifact the run lists, into `dir` (made if absent) at its listed path, each as `-o` writes one: beside
 * itself until whole and verified. One listing for all, then the run's archive in one request (artifact-archive.ts)
 * — or, from a control plane without it (or with EVERDICT_ARTIFACT_ARCHIVE=0), each file alone (fetchEach). The
 * files kept before a failure stay, each verified. A listed path that would land outside `dir` is refused before
 * any byte is fetched.
 */
async function downloadAll(ctx: Context, runId: string, dir: string): Promise<number> {
  const root = resolve(dir);
  try {
    makeDirectories(root);
  } catch (e) {
    throw new CliError('usage', `cannot make ${dir}: ${(e as Error).message}`);
  }
  const items = await listed(ctx, runId);
  const targets: Target[] = items.map((entry) => {
    const target = resolve(root, entry.name);
    if (!target.startsWith(root + sep))
      throw new CliError(
        'refused',
        `run ${runId} lists ${JSON.stringify(entry.name)}: not a path inside ${dir}`,
      );
    return { entry, target };
  });
  const archived =
    targets.length > 0 &&
    ctx.io.env.EVERDICT_ARTIFACT_ARCHIVE !== '0' &&
    (await fetchArchive(ctx, runId, targets));
  if (!archived) await fetchEach(ctx, runId, targets);
  line(
    ctx.io.stderr,
    items.length === 0
      ? `run ${runId} lists no artifacts`
      : `${items.length} artifact${items.length === 1 ? '' : 's'} of ${runId} in ${dir}, each verified`,
  );
  return 0;
}

/**
 * Each target by its own request, up to FETCHES_IN_FLIGHT at once in the listing's order (a control plane
 * without the archive route). The first failure stops it: no other fetch starts, the ones in flight end (each
 * kept only verified), and that failure is the answer.
 */
async function fetchEach(ctx: Context, runId: string, targets: readonly Target[]): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < targets.length) {
      const { entry, target } = targets[next++]!;
      try {
        makeParent(target);
        await save(ctx, runId, entry, destination(target), target);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(FETCHES_IN_FLIGHT, targets.length) }, worker));
  if (failure) throw failure.error;
}

export async function artifactCommand(
  ctx: Context,
  runId: string,
  path: string | undefined,
  o: { output?: string; json?: boolean; dir?: string },
): Promise<number> {
  if (o.dir !== undefined) {
    if (path !== undefined || o.output !== undefined || o.json)
      throw new CliError('usage', 'artifact: --dir fetches every artifact; no path, -o or --json with it');
    return downloadAll(ctx, runId, o.dir);
  }
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
    .option('-d, --dir <dir>', 'fetch every artifact into DIR at its listed path, each verified')
    .action((runId: string, path: string | undefined, o: { output?: string; json?: boolean; dir?: string }) =>
      done(artifactCommand(ctx(), runId, path, o)),
    );
}
