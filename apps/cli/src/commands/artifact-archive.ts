// `artifact --dir` in one request: the run's archive (`GET /runs/:id/artifacts.tar`, every listed artifact in one
// tar), each entry written and verified as `-o` writes one file — against the listing fetched before it, so the
// archive is trusted for nothing: an entry the run does not list, one listed twice, anything but a regular file,
// or an archive that ends before every listed file came is `not_verified`.

import { dirname } from 'node:path';
import { errorFromResponse, isClientError } from '@everdict/client';
import { extract } from 'tar-stream';
import type { Context } from '../context.js';
import { makeDirectories } from '../directories.js';
import { CliError } from '../errors.js';
import { type Artifact, destination, fetchBody, receive } from './artifact-files.js';

/** A listed artifact and the file it becomes. */
export interface Target {
  entry: Artifact;
  target: string;
}

/** Makes the directory a target goes in (a usage error when it cannot be made). */
export function makeParent(target: string): void {
  try {
    makeDirectories(dirname(target));
  } catch (e) {
    throw new CliError('usage', `cannot make ${dirname(target)}: ${(e as Error).message}`);
  }
}

/** Resolves when the reader takes more bytes, or is gone (an error ends the loop that reads it, not this wait). */
function drainedOrClosed(ex: ReturnType<typeof extract>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      ex.off('drain', done);
      ex.off('close', done);
      resolve();
    };
    ex.on('drain', done);
    ex.on('close', done);
  });
}

const refused = (why: string) => new CliError('not_verified', `the run's archive ${why}`);

/**
 * Every target from the run's archive, each kept only verified (the ones kept before a failure stay, each
 * verified). False, with nothing fetched, when the control plane has no archive route (404 `route_not_found`: an
 * older one) or no archive of this run (409 `conflict`); the caller then fetches each file alone.
 */
export async function fetchArchive(
  ctx: Context,
  runId: string,
  targets: readonly Target[],
): Promise<boolean> {
  const { res, release } = await fetchBody(ctx, `/runs/${encodeURIComponent(runId)}/artifacts.tar`);
  try {
    if (!res.ok) {
      const error = errorFromResponse(res, await res.json().catch(() => undefined));
      // No archive here (an older control plane), or none of this run (a listed path no archive holds as it is,
      // 409): each file alone instead.
      if (isClientError(error, 'route_not_found') || isClientError(error, 'conflict')) return false;
      throw error;
    }
    if (!res.body) throw new CliError('unavailable', `HTTP ${res.status} without a body`);
    await unpack(ctx, res.body as unknown as AsyncIterable<Uint8Array>, targets);
    return true;
  } finally {
    release();
  }
}

async function unpack(
  ctx: Context,
  body: AsyncIterable<Uint8Array>,
  targets: readonly Target[],
): Promise<void> {
  const byName = new Map(targets.map((t) => [t.entry.name, t]));
  const ex = extract();
  let stopped = false;
  // The answer's bytes into the reader, at the pace its entries are written out.
  const feeding = (async () => {
    try {
      for await (const piece of body) {
        if (stopped) return;
        if (!ex.write(piece)) await drainedOrClosed(ex);
      }
      ex.end(null); // no last piece (streamx takes null as none)
    } catch (e) {
      ex.destroy(e as Error);
    }
  })();
  try {
    for await (const item of ex) {
      const { name, type } = item.header;
      if (type !== 'file') throw refused(`holds ${JSON.stringify(name)}, a ${type} (only files are listed)`);
      const t = byName.get(name);
      if (!t) throw refused(`holds ${JSON.stringify(name)}, which the run does not list, or holds it twice`);
      byName.delete(name);
      makeParent(t.target);
      await receive(ctx, t.entry, item as AsyncIterable<Uint8Array>, destination(t.target), t.target);
    }
  } catch (e) {
    if (e instanceof CliError) throw e;
    if (ctx.io.signal?.aborted) throw new CliError('interrupted', 'stopped while the archive came');
    throw new CliError(
      'not_verified',
      `the run's archive broke off with ${targets.length - byName.size} of ${targets.length} files (the control plane found bytes altered, or the connection dropped): ${(e as Error).message}`,
    );
  } finally {
    stopped = true;
    ex.destroy();
    await feeding;
  }
  if (byName.size > 0)
    throw refused(
      `ended with ${targets.length - byName.size} of ${targets.length} files; ${JSON.stringify(byName.keys().next().value)} never came`,
    );
}
