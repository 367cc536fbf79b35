// Workspace snapshots on a local filesystem: a directory → its canonical tar and BLAKE3 address, and a
// verified snapshot → a directory (swapped in whole, so a refused restore leaves the old one untouched).
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { snapshotAddress } from './address.js';
import { PlacementError } from './errors.js';
import { removeTreeNoFollow } from './remove-tree.js';
import { Snapshot } from './spec.js';
import type { TarEntry } from './tar/tar-entry.js';
import { readTar } from './tar/tar-reader.js';
import { writeTar } from './tar/tar-writer.js';
import { readTree, type WriteTreeOptions, writeTree } from './tar/tree.js';

/** The canonical archive of a directory's contents and its address. */
export async function snapshotDirectory(dir: string): Promise<Snapshot> {
  const bytes = await writeTar(await readTree(dir));
  return { address: snapshotAddress(bytes), bytes };
}

/**
 * The entries of a snapshot, after checking that its bytes hash to its address and are exactly the
 * canonical archive of those entries (so a restore anywhere snapshots back to the same address).
 */
export async function verifiedSnapshotEntries(input: Snapshot): Promise<TarEntry[]> {
  const snapshot = Snapshot.parse(input); // malformed input is zod's ZodError, before anything is touched
  const actual = snapshotAddress(snapshot.bytes);
  if (actual !== snapshot.address) {
    throw new PlacementError('snapshot_mismatch', 'snapshot bytes do not hash to the offered address', {
      offered: snapshot.address,
      actual,
    });
  }
  const entries = await readTar(snapshot.bytes);
  const canonical = await writeTar(entries);
  if (Buffer.compare(Buffer.from(canonical), Buffer.from(snapshot.bytes)) !== 0) {
    throw new PlacementError('snapshot_mismatch', 'snapshot bytes are not the canonical archive form', {
      offered: snapshot.address,
    });
  }
  return entries;
}

/**
 * Replaces the contents of `dir` with a verified snapshot: written into a fresh sibling first, then
 * swapped in by rename. Any refusal (address, form, unsafe paths) happens before `dir` is touched. The old
 * contents are removed without following symlinks (`removeTreeNoFollow`): a command still running there
 * may swap a directory for a symlink to a host path mid-removal. What such a command keeps adding may be
 * left as `.<dir>.old-<tag>` beside it (the swap is done either way).
 */
export async function restoreDirectory(
  dir: string,
  snapshot: Snapshot,
  options: WriteTreeOptions = {},
): Promise<void> {
  const entries = await verifiedSnapshotEntries(snapshot);
  const tag = randomBytes(6).toString('hex');
  const fresh = join(dirname(dir), `.${basename(dir)}.restore-${tag}`);
  const old = join(dirname(dir), `.${basename(dir)}.old-${tag}`);
  await mkdir(fresh);
  try {
    await chmod(fresh, (await stat(dir)).mode & 0o7777); // the root's mode is the directory's, not the archive's
    if (options.owner) {
      await chown(fresh, options.owner.uid, options.owner.gid);
    }
    await writeTree(fresh, entries, options);
    await rename(dir, old); // `dir` gone meanwhile (its sandbox disposed): nothing is swapped in
  } catch (e) {
    await rm(fresh, { recursive: true, force: true });
    throw e;
  }
  await rename(fresh, dir);
  await removeTreeNoFollow(old);
}
