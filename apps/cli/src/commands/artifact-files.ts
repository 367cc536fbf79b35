// What `artifact` does with one artifact's bytes, however they arrive (an answer of their own, or an entry of the
// run's archive): hashed as they come, written beside the target file and renamed onto it only once whole and
// verified against the address the run lists — or printed to stdout. Also the one fetch both use: headers within
// the request timeout, the body for as long as it takes, both cut by Ctrl-C.

import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, openSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ClientError, type components } from '@everdict/client';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { type Context, requestTimeoutMs } from '../context.js';
import { CliError } from '../errors.js';
import { line } from '../io.js';

/** One entry of a run's `outputs.artifacts`, as the API document types it. */
export type Artifact = NonNullable<components['schemas']['Run']['outputs']>['artifacts'][number];

/** Where one artifact's bytes go: a file made beside its target, renamed onto it once verified. */
export type Destination = ReturnType<typeof destination>;

/**
 * Where the bytes go: stdout, or a file made beside FILE (opened here, so a path that cannot be written is a
 * usage error before any byte is fetched) and renamed onto it once verified.
 */
export function destination(out: string | undefined) {
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
 * The answer to a GET of `path`: its headers within the request timeout, its body for as long as it takes (a large
 * artifact, a run's archive), both cut by Ctrl-C until `release()`.
 */
export async function fetchBody(ctx: Context, path: string): Promise<{ res: Response; release: () => void }> {
  const cut = new AbortController();
  const interrupt = () => cut.abort();
  const release = () => ctx.io.signal?.removeEventListener('abort', interrupt);
  ctx.io.signal?.addEventListener('abort', interrupt, { once: true });
  const timer = setTimeout(() => cut.abort(), requestTimeoutMs(ctx.io.env));
  try {
    const res = await fetch(`${ctx.url}${path}`, {
      headers: ctx.key ? { authorization: `Bearer ${ctx.key}` } : {},
      signal: cut.signal,
    });
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

/** A failure of the bytes' source (cut short), as opposed to one of writing them. */
class BrokeOff extends Error {}

/**
 * One listed artifact's bytes to `dest` (or stdout), hashed as they arrive; kept only once they hash to the
 * address the run lists. Bytes that break off or hash to another address are `not_verified`, nothing written.
 */
export async function receive(
  ctx: Context,
  entry: Artifact,
  body: AsyncIterable<Uint8Array>,
  dest: Destination,
  out: string | undefined,
): Promise<void> {
  const path = entry.name;
  const expected = entry.uri.replace(/^artifact:/, '');
  const nothing = dest ? '; nothing written' : '';
  const hasher = blake3.create();
  let size = 0;
  async function* hashed() {
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
  try {
    if (dest) await pipeline(hashed(), dest.file);
    else
      for await (const piece of hashed()) if (!ctx.io.stdout.write(piece)) await once(ctx.io.stdout, 'drain');
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
}
