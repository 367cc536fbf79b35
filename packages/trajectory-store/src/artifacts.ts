// Run artifacts (the files a run writes under `out/`), content-addressed: stored once per tenant at their
// BLAKE3 address, streamed in (hashed on the way, never held whole) and verified on the way out.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { ArtifactRef } from '@everdict/run-model';
import { z } from 'zod';
import type { ObjectBackend } from './backend.js';
import { type Digest, isDigest, StreamingDigest } from './digest.js';
import { parseOrThrow, TrajectoryStoreError } from './errors.js';
import { checkTenant, layout } from './keys.js';

/** A stored artifact as the run lists it: its path under `out/`, its address, its size in bytes. */
export interface ArtifactEntry {
  readonly path: string;
  readonly address: Digest;
  readonly size: number;
}

/** A relative POSIX path without `.`/`..` segments, empty segments or a leading slash. */
export const ArtifactPath = z
  .string()
  .min(1)
  .max(1024)
  .refine(
    (p) =>
      !p.startsWith('/') &&
      p.split('/').every((s) => s !== '' && s !== '.' && s !== '..') &&
      !p.includes('\0'),
    'a relative path without empty, . or .. segments',
  );

type Body = Uint8Array | AsyncIterable<Uint8Array>;

async function* pieces(body: Body): AsyncGenerator<Uint8Array> {
  if (body instanceof Uint8Array) yield body;
  else yield* body;
}

/** An artifact stored at a staging key and hashed, not yet at its address (`placeArtifact` puts it there). */
export interface StagedArtifact extends ArtifactEntry {
  readonly tenant: string;
  /** The staging object's path (`uploads/<token>`). */
  readonly upload: string;
}

/**
 * Streams an artifact to a staging key (`uploads/<token>`), hashing it on the way in. A caller that must decide
 * something between the upload and its address (the control plane lists it under a lease, in one critical
 * section with `placeArtifact`) stages first; a leftover staging object is swept (`sweepArtifacts`).
 */
export async function stageArtifact(
  backend: ObjectBackend,
  tenant: string,
  artifact: { path: string; body: Body },
): Promise<StagedArtifact> {
  checkTenant(tenant);
  const relPath = parseOrThrow(ArtifactPath, artifact.path, 'artifact path');
  const hasher = await StreamingDigest.create();
  async function* hashed(): AsyncGenerator<Uint8Array> {
    for await (const piece of pieces(artifact.body)) {
      hasher.update(piece);
      yield piece;
    }
  }
  const upload = layout.upload(randomBytes(12).toString('hex'));
  const written = await backend.putStream({ tenant, path: upload }, hashed());
  return { tenant, upload, path: relPath, address: hasher.digest(), size: written.size };
}

/** Puts a staged artifact at its address — or drops the staged copy where the same bytes are already there. */
export async function placeArtifact(backend: ObjectBackend, staged: StagedArtifact): Promise<ArtifactEntry> {
  const upload = { tenant: staged.tenant, path: staged.upload };
  const target = { tenant: staged.tenant, path: layout.artifact(staged.address.slice(7)) };
  if (await backend.stat(target)) await backend.delete(upload);
  else await backend.move(upload, target);
  return { path: staged.path, address: staged.address, size: staged.size };
}

/** Deletes a staged artifact that will not be placed. */
export function discardStaged(backend: ObjectBackend, staged: StagedArtifact): Promise<void> {
  return backend.delete({ tenant: staged.tenant, path: staged.upload });
}

/** Stages and places an artifact in one go (nothing to decide between them). */
export async function putArtifact(
  backend: ObjectBackend,
  tenant: string,
  artifact: { path: string; body: Body },
): Promise<ArtifactEntry> {
  return placeArtifact(backend, await stageArtifact(backend, tenant, artifact));
}

/** Stores every file under `dir` (recursively, sorted by path); the listing `outputs.artifacts` draws on. */
export async function putArtifactsFromDir(
  backend: ObjectBackend,
  tenant: string,
  dir: string,
): Promise<ArtifactEntry[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
  const out: ArtifactEntry[] = [];
  for (const rel of files)
    out.push(await putArtifact(backend, tenant, { path: rel, body: createReadStream(path.join(dir, rel)) }));
  return out;
}

/**
 * The artifact's bytes as a stream, hashed as they pass. The last piece is held back until the whole has been
 * hashed: if the bytes do not match the address the stream fails with `integrity_failed` before it, so an
 * altered artifact never arrives whole (an HTTP answer of it ends short of its length) — and a consumer acts
 * only on a stream that ended cleanly.
 */
export async function readArtifact(
  backend: ObjectBackend,
  tenant: string,
  address: string,
): Promise<AsyncIterable<Uint8Array>> {
  const body = await backend.getStream(artifactKey(tenant, address));
  if (!body) throw new TrajectoryStoreError('not_found', `no artifact ${address}`);
  const hasher = await StreamingDigest.take();
  return (async function* () {
    let held: Uint8Array | undefined;
    for await (const piece of body) {
      hasher.update(piece);
      if (held) yield held;
      held = piece;
    }
    checkAddress(hasher, address);
    if (held) yield held;
  })();
}

/**
 * The whole artifact, verified against its address before it is returned: one read of the object (for a small
 * one; a large one is better streamed with `readArtifact`).
 */
export async function readArtifactBytes(
  backend: ObjectBackend,
  tenant: string,
  address: string,
): Promise<Buffer> {
  const bytes = await backend.get(artifactKey(tenant, address));
  if (!bytes) throw new TrajectoryStoreError('not_found', `no artifact ${address}`);
  const hasher = await StreamingDigest.take();
  hasher.update(bytes);
  checkAddress(hasher, address);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function artifactKey(tenant: string, address: string): { tenant: string; path: string } {
  checkTenant(tenant);
  if (!isDigest(address))
    throw new TrajectoryStoreError('bad_request', 'an artifact address is blake3:<64 hex>');
  return { tenant, path: layout.artifact(address.slice(7)) };
}

/** Fails `integrity_failed` unless what `hasher` took hashes to `address`; gives the hasher back when it does. */
function checkAddress(hasher: StreamingDigest, address: string): void {
  if (hasher.digest() !== address)
    throw new TrajectoryStoreError(
      'integrity_failed',
      `artifact ${address}: bytes do not match their address`,
    );
  hasher.release();
}

/** run-model's ArtifactRef for an entry: name = path, uri = address, bytes = size, digest = address. */
export function toArtifactRef(entry: ArtifactEntry, contentType?: string): ArtifactRef {
  return {
    name: entry.path,
    uri: entry.address,
    bytes: entry.size,
    digest: entry.address,
    ...(contentType ? { contentType } : {}),
  };
}
