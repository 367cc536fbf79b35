// everdict artifact <run> [path] [-o FILE] [--dir DIR] — the files a run's command left under `out/`: without a
// path, the run's list (`outputs.artifacts`); `--dir` every one of them into DIR; with a path, its bytes
// (`GET /runs/:id/artifact?path=`) to stdout or FILE, hashed as they arrive and checked against the address the
// run lists. FILE appears only once its bytes are whole and verified (written beside it, then renamed); bytes that
// do not match are `not_verified` (exit 1).

import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, openSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ClientError, type components, errorFromResponse } from '@everdict/client';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { Command } from 'commander';
import { type Context, type Done, requestTimeoutMs } from '../context.js';
import { makeDirectories } from '../directories.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';
import { table } from '../table.js';

/** One entry of a run's `outputs.artifacts`, as the API document types it. */
type Artifact = NonNullable<components['schemas']['Run']['outputs']>['artifacts'][number];

async function listed(ctx: Context, runId: string): Promise<Artifact[]> {
  const { data } = await ctx.client.GET('/runs/{id}', { params: { path: { id: runId } } });
  return data?.outputs?.artifacts ?? [];
}

/**
 * Where the bytes go: stdout, or a file made beside FILE (opened here, so a path that cannot be written is a
 * usage error before any byte is fetched) and renamed onto it once verified.
 */
function destination(out: string | undefined) {
  if (out === undefined || out === '-') return undefined;
  const partial = join(dirname(out), `.${basename(out)}.${randomBytes(6).toString('hex')}.partial`);
  let fd: number;
  try {
    fd = openSync(partial, 'wx');
  } catch (e) {
    throw new CliError('usage', `cannot write ${out}: ${(e as Error).message}`);
  }
  const file = createWriteStream(partial, { fd });
  return {
    file,
    keep: () => renameSync(partial, out),
    discard: () => {
      file.destroy();
      rmSync(partial, { force: true });
    },
  };
}

/**
 * The artifact's answer: its headers within the request timeout, its body for as long as it takes (a large
 * artifact), both cut by Ctrl-C until `release()`.
 */
async function fetchArtifact(
  ctx: Context,
  runId: string,
  path: string,
): Promise<{ res: Response; release: () => void }> {
  const cut = new AbortController();
  const interrupt = () => cut.abort();
  const release = () => ctx.io.signal?.removeEventListener('abort', interrupt);
  ctx.io.signal?.addEventListener('abort', interrupt, { once: true });
  const timer = setTimeout(() => cut.abort(), requestTimeoutMs(ctx.io.env));
  try {
    const res = await fetch(
      `${ctx.url}/runs/${encodeURIComponent(runId)}/artifact?path=${encodeURIComponent(path)}`,
      { headers: ctx.key ? { authorization: `Bearer ${ctx.key}` } : {}, signal: cut.signal },
    );
    return { res, release };
  } catch (e) {
    release();
    if (ctx.io.signal?.aborted)
      throw new CliError('interrupted', 'stopped before the control plane answered');
    throw new CliError('unavailable', `no answer from the control plane: ${(e as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
}

/** A failure of the answer's body (cut short), as opposed to one of writing it. */
class BrokeOff extends Error {}

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

/** One listed artifact's bytes to `dest` (or stdout), hashed as they arrive; kept only once they match. */
async function save(
  ctx: Context,
  runId: string,
  entry: Artifact,
  dest: ReturnType<typeof destination>,
  out: string | undefined,
): Promise<number> {
  const path = entry.name;
  const expected = entry.uri.replace(/^artifact:/, '');
  const nothing = dest ? '; nothing written' : '';
  const hasher = blake3.create();
  let size = 0;
  async function* hashed(body: AsyncIterable<Uint8Array>) {
    try {
      for await (const piece of body) {
        hasher.update(piece);
        size += piece.length;
        yield piece;
      }
    } catch (e) {
      throw new BrokeOff((e as Error).message);
    }
  }
  const { res, release } = await fetchArtifact(ctx, runId, path).catch((e: unknown) => {
    dest?.discard();
    throw e;
  });
  try {
    // A refusal's problem document, reported as every other command reports it.
    if (!res.ok) throw errorFromResponse(res, await res.json().catch(() => undefined));
    if (!res.body) throw new CliError('unavailable', `HTTP ${res.status} without a body`);
    const body = res.body as unknown as AsyncIterable<Uint8Array>;
    if (dest) await pipeline(hashed(body), dest.file);
    else
      for await (const piece of hashed(body))
        if (!ctx.io.stdout.write(piece)) await once(ctx.io.stdout, 'drain');
  } catch (e) {
    dest?.discard();
    if (!(e instanceof BrokeOff)) {
      if (dest && !(e instanceof CliError) && !(e instanceof ClientError))
        throw new CliError('unavailable', `cannot write ${out}: ${(e as Error).message}`);
      throw e;
    }
    if (ctx.io.signal?.aborted)
      throw new CliError('interrupted', `stopped after ${size} bytes of ${path}${nothing}`);
    throw new CliError(
      'not_verified',
      `${path}: the bytes broke off after ${size} of ${entry.bytes ?? '?'} (the control plane found them altered, or the connection dropped)${nothing}: ${e.message}`,
    );
  } finally {
    release();
  }
  const got = `blake3:${bytesToHex(hasher.digest())}`;
  if (got !== expected) {
    dest?.discard();
    throw new CliError(
      'not_verified',
      `${path}: the bytes hash to ${got}, the run lists ${expected}${nothing}`,
    );
  }
  dest?.keep();
  if (dest) line(ctx.io.stderr, `${out}: ${size} bytes, ${got} (verified)`);
  return 0;
}

/** Artifacts `--dir` fetches at once: an out/ of many small files pays a round trip each, not in turn. */
export const FETCHES_IN_FLIGHT = 8;

/**
 * Every artifact the run lists, into `dir` (made if absent) at its listed path, each as `-o` writes one: beside
 * itself until whole and verified. One listing for all; up to FETCHES_IN_FLIGHT fetched at once, in the listing's
 * order. The first failure stops it: no other fetch starts, the ones in flight end (each kept only verified), and
 * that failure is the answer (the files kept stay, each verified). A listed path that would land outside `dir` is
 * refused before any byte is fetched.
 */
async function downloadAll(ctx: Context, runId: string, dir: string): Promise<number> {
  const root = resolve(dir);
  try {
    makeDirectories(root);
  } catch (e) {
    throw new CliError('usage', `cannot make ${dir}: ${(e as Error).message}`);
  }
  const items = await listed(ctx, runId);
  const targets = items.map((entry) => {
    const target = resolve(root, entry.name);
    if (!target.startsWith(root + sep))
      throw new CliError(
        'refused',
        `run ${runId} lists ${JSON.stringify(entry.name)}: not a path inside ${dir}`,
      );
    return { entry, target };
  });
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure && next < targets.length) {
      const { entry, target } = targets[next++]!;
      try {
        try {
          makeDirectories(dirname(target));
        } catch (e) {
          throw new CliError('usage', `cannot make ${dirname(target)}: ${(e as Error).message}`);
        }
        await save(ctx, runId, entry, destination(target), target);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(FETCHES_IN_FLIGHT, targets.length) }, worker));
  if (failure) throw failure.error;
  line(
    ctx.io.stderr,
    items.length === 0
      ? `run ${runId} lists no artifacts`
      : `${items.length} artifact${items.length === 1 ? '' : 's'} of ${runId} in ${dir}, each verified`,
  );
  return 0;
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
