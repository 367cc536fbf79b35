// What the store knows about one trajectory, rebuilt from the backend alone (so a restart loses nothing):
// `deleted.json` → deleted; `seal.json` → sealed; otherwise live, its index read from the chunk listing.
import type { ObjectBackend } from './backend.js';
import { ChunkIndex, parseChunkName } from './chunk-index.js';
import { TrajectoryStoreError } from './errors.js';
import { layout } from './keys.js';
import { DeletionRecord, type Provenance, SealRecord, TrajectoryMeta } from './records.js';

export type TrajectoryState =
  | { readonly status: 'live'; readonly index: ChunkIndex; provenance?: Provenance }
  | { readonly status: 'sealed'; readonly seal: SealRecord }
  | { readonly status: 'deleted'; readonly deletion: DeletionRecord };

export async function readRecord<T>(
  backend: ObjectBackend,
  tenant: string,
  path: string,
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } },
): Promise<T | null> {
  const bytes = await backend.get({ tenant, path });
  if (!bytes) return null;
  let parsed: ReturnType<typeof schema.safeParse>;
  try {
    parsed = schema.safeParse(JSON.parse(Buffer.from(bytes).toString('utf8')));
  } catch {
    parsed = { success: false };
  }
  if (!parsed.success) throw new TrajectoryStoreError('integrity_failed', `record ${path} does not parse`);
  return parsed.data;
}

export async function loadState(
  backend: ObjectBackend,
  tenant: string,
  id: string,
): Promise<TrajectoryState> {
  const deletion = await readRecord(backend, tenant, layout.deletion(id), DeletionRecord);
  if (deletion) return { status: 'deleted', deletion };
  const seal = await readRecord(backend, tenant, layout.seal(id), SealRecord);
  if (seal) {
    // A seal that crashed before removing its chunks leaves them behind: finish the job.
    for await (const leftover of backend.list(tenant, `${layout.chunksDir(id)}/`))
      await backend.delete({ tenant, path: leftover.path });
    return { status: 'sealed', seal };
  }
  const index = await readIndex(backend, tenant, id);
  const meta = await readRecord(backend, tenant, layout.meta(id), TrajectoryMeta);
  return meta ? { status: 'live', index, provenance: meta.provenance } : { status: 'live', index };
}

export async function readIndex(backend: ObjectBackend, tenant: string, id: string): Promise<ChunkIndex> {
  const index = new ChunkIndex();
  const dir = `${layout.chunksDir(id)}/`;
  let first = true;
  for await (const object of backend.list(tenant, dir)) {
    first = false;
    const entry = parseChunkName(object.path.slice(dir.length));
    if (!entry || !index.push(entry))
      throw new TrajectoryStoreError('integrity_failed', `chunk ${object.path} does not continue the index`, {
        trajectoryId: id,
      });
  }
  if (first) index.running = { text: null, stored: null, textBytes: 0 };
  return index;
}
