// Images of the process driver. `default` is the host's read-only /usr, /bin, /lib* and /etc/ssl with an
// empty workspace; a named image is a root filesystem directory <imagesDir>/<name>/ added by importImage
// from a tarball. Any other reference (`alpine:3.20`, a registry path) is `image_not_found` here — on
// Kubernetes the same field names a container image. A named image's digest is BLAKE3 of its directory's
// deterministic tar, computed at import and kept beside it (<imagesDir>/.<name>.blake3).
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  isDirectory,
  PlacementError,
  readTar,
  snapshotDirectory,
  type TarEntry,
  writeTree,
} from '@everdict/placement';

/** A local image name: lower-case, no `:` or `/` (so a registry reference never matches one). */
export const IMAGE_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export type ResolvedImage =
  | { readonly kind: 'default'; readonly ref: 'default'; readonly digest: null }
  | { readonly kind: 'named'; readonly ref: string; readonly root: string; readonly digest: string };

const digestFile = (imagesDir: string, name: string) => join(imagesDir, `.${name}.blake3`);
const cache = new Map<string, string>();

/** The image a reference names on this host, or `image_not_found`. */
export async function resolveImage(imagesDir: string, ref: string): Promise<ResolvedImage> {
  if (ref === 'default') return { kind: 'default', ref: 'default', digest: null };
  const root = join(imagesDir, ref);
  if (!IMAGE_NAME.test(ref) || ref === 'default' || !(await isDirectory(root))) {
    throw new PlacementError(
      'image_not_found',
      `no image ${JSON.stringify(ref)} on this host (default, or a name under ${imagesDir})`,
      {
        image: ref,
      },
    );
  }
  return { kind: 'named', ref, root, digest: await imageDigest(imagesDir, ref) };
}

/** BLAKE3 of the image directory's deterministic tar: from memory, else the file import wrote, else computed (and kept). */
export async function imageDigest(imagesDir: string, name: string): Promise<string> {
  const key = join(imagesDir, name);
  const known = cache.get(key);
  if (known) return known;
  let digest: string;
  try {
    digest = (await readFile(digestFile(imagesDir, name), 'utf8')).trim();
    if (!/^[0-9a-f]{64}$/.test(digest)) throw new Error('malformed digest file');
  } catch {
    digest = (await snapshotDirectory(key)).address;
    await writeFile(digestFile(imagesDir, name), `${digest}\n`);
  }
  cache.set(key, digest);
  return digest;
}

/**
 * Setuid and setgid bits are dropped on import: the image is a directory on the host, where a tarball's
 * setuid-root file would be a root program for every host user; in a sandbox they do nothing (bubblewrap
 * sets no_new_privs). The sticky bit and the rest of the mode are kept.
 */
const withoutSetId = (entry: TarEntry): TarEntry => ({ ...entry, mode: entry.mode & ~0o6000 });

export interface ImportedImage {
  readonly name: string;
  readonly root: string;
  readonly digest: string;
}

/**
 * Adds (or replaces) the image `name` from a tarball (plain or gzip): extracted into a fresh directory
 * (no path escapes, no writes through symlinks, hard links copied, device files and fifos skipped, setuid
 * and setgid bits dropped), the mount points the sandbox needs made (proc, dev, tmp, workspace), its digest
 * computed, then swapped in.
 */
export async function importImage(
  imagesDir: string,
  name: string,
  tarball: Uint8Array,
): Promise<ImportedImage> {
  if (!IMAGE_NAME.test(name) || name === 'default') {
    throw new PlacementError(
      'image_not_found',
      `${JSON.stringify(name)} is not a local image name (${IMAGE_NAME})`,
      {
        image: name,
      },
    );
  }
  await mkdir(imagesDir, { recursive: true, mode: 0o755 });
  const entries = (await readTar(tarball, { skipSpecial: true })).map(withoutSetId);
  const tag = randomBytes(6).toString('hex');
  const fresh = join(imagesDir, `.import-${name}-${tag}`);
  await mkdir(fresh, { mode: 0o755 });
  try {
    await writeTree(fresh, entries);
    for (const mountPoint of ['proc', 'dev', 'tmp', 'workspace']) {
      await mkdir(join(fresh, mountPoint), { recursive: true, mode: 0o755 });
    }
    const digest = (await snapshotDirectory(fresh)).address;
    const root = join(imagesDir, name);
    const old = join(imagesDir, `.old-${name}-${tag}`);
    if (await isDirectory(root)) await rename(root, old);
    await rename(fresh, root);
    await writeFile(digestFile(imagesDir, name), `${digest}\n`);
    cache.set(root, digest);
    await rm(old, { recursive: true, force: true });
    return { name, root, digest };
  } catch (e) {
    await rm(fresh, { recursive: true, force: true });
    throw e;
  }
}
