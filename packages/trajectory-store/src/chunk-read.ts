// Reading one live chunk back, checked against its index entry (missing or short chunks are integrity
// failures, never silently fewer events).
import type { ObjectBackend } from './backend.js';
import { type ChunkEntry, chunkName } from './chunk-index.js';
import { inflate, splitLines } from './codec.js';
import { TrajectoryStoreError } from './errors.js';
import { layout } from './keys.js';

/** The stored (gzip) bytes of one chunk. */
export async function readChunkBytes(
  backend: ObjectBackend,
  tenant: string,
  id: string,
  entry: ChunkEntry,
): Promise<Uint8Array> {
  const name = chunkName(entry);
  const bytes = await backend.get({ tenant, path: layout.chunk(id, name) });
  if (!bytes)
    throw new TrajectoryStoreError('integrity_failed', `chunk ${name} is missing`, { trajectoryId: id });
  return bytes;
}

/** The canonical lines (without newlines) of one chunk. */
export async function readChunkLines(
  backend: ObjectBackend,
  tenant: string,
  id: string,
  entry: ChunkEntry,
): Promise<string[]> {
  const name = chunkName(entry);
  const text = await inflate(await readChunkBytes(backend, tenant, id, entry), `chunk ${name}`);
  const lines = splitLines(text, `chunk ${name}`);
  if (lines.length !== entry.count)
    throw new TrajectoryStoreError('integrity_failed', `chunk ${name} holds ${lines.length} events`, {
      trajectoryId: id,
    });
  return lines;
}
