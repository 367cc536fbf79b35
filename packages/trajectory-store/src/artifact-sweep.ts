// The artifact sweep: deletes what nothing needs any more — an artifact no caller references (an attempt's upload
// that no settled run claims), and a staged upload left behind by an upload that never reached its address (a
// crash between the two). Artifacts are content-addressed and shared within a tenant, so "referenced" is the
// caller's answer for the address, asked in a critical section that placing the same address also takes: an
// upload of the same bytes either lists its reference first (and the artifact is kept) or finds it gone and
// writes it again.
import type { ObjectBackend } from './backend.js';
import { type Digest, isDigest } from './digest.js';
import { checkTenant, layout } from './keys.js';

const DAY_MS = 86_400_000;

export interface ArtifactSweepOptions<Ctx> {
  readonly now: Date;
  /** A staged upload older than this is a leftover (default 24 h: longer than any upload takes). */
  readonly uploadGraceMs?: number;
  /** Runs one address's check and deletion as one critical section against placing that address. */
  readonly exclusive: <T>(address: Digest, fn: (ctx: Ctx) => Promise<T>) => Promise<T>;
  /** Whether anything still needs the artifact at `address` (asked inside `exclusive`, with its context). */
  readonly isReferenced: (address: Digest, ctx: Ctx) => Promise<boolean>;
}

export interface ArtifactSweep {
  /** The addresses deleted, in the order the listing gave them. */
  readonly deleted: Digest[];
  readonly kept: number;
  readonly uploadsDeleted: number;
}

const ARTIFACTS = 'artifacts/blake3/';

/** The address an object path under `artifacts/blake3/` names, or null for anything else. */
export function artifactAddressOf(objectPath: string): Digest | null {
  if (!objectPath.startsWith(ARTIFACTS)) return null;
  const hex = objectPath.slice(objectPath.lastIndexOf('/') + 1);
  const address = `blake3:${hex}`;
  return isDigest(address) && objectPath === layout.artifact(hex) ? address : null;
}

export async function sweepArtifacts<Ctx>(
  backend: ObjectBackend,
  tenant: string,
  opts: ArtifactSweepOptions<Ctx>,
): Promise<ArtifactSweep> {
  checkTenant(tenant);
  const deleted: Digest[] = [];
  let kept = 0;
  for await (const object of backend.list(tenant, ARTIFACTS)) {
    const address = artifactAddressOf(object.path);
    if (!address) continue;
    const gone = await opts.exclusive(address, async (ctx) => {
      if (await opts.isReferenced(address, ctx)) return false;
      await backend.delete({ tenant, path: object.path });
      return true;
    });
    if (gone) deleted.push(address);
    else kept++;
  }
  const grace = opts.uploadGraceMs ?? DAY_MS;
  let uploadsDeleted = 0;
  for await (const object of backend.list(tenant, layout.upload(''))) {
    // An upload whose age the backend does not report is kept: only an observed age condemns it.
    if (object.modifiedAt === null || opts.now.getTime() - object.modifiedAt.getTime() <= grace) continue;
    await backend.delete({ tenant, path: object.path });
    uploadsDeleted++;
  }
  return { deleted, kept, uploadsDeleted };
}
