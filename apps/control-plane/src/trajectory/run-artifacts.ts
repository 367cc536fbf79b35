// A run's artifacts as a user fetches them: one by its path, or every one the run lists as one tar archive.
// Only what the run's outputs list, stored under the lease of the attempt that settled it (runners/artifact-claims.ts),
// is served; the bytes stream from the store hashed as they pass, and a mismatch with the address fails the stream
// before that file's last piece (`integrity_failed`) — a reader acts on a complete body only. Another tenant's run,
// or a path the outputs do not list: `not_found`.
import { normalizeEntryPath, type StreamedFile, streamTar } from '@everdict/placement';
import { type ObjectBackend, readArtifact, readArtifactBytes } from '@everdict/trajectory-store';
import { sql } from 'kysely';
import { type DbNumeric, numeric } from '../db/numeric.js';
import type { Executor } from '../db/tx.js';
import { ControlPlaneError, notFound } from '../errors.js';
import { mapStoreErrors } from './errors.js';

/** One artifact's bytes, as stored, with their address and size. */
export interface ArtifactBody {
  address: string;
  size: number;
  body: AsyncIterable<Uint8Array>;
}

/** A listed entry with what is stored under its path for the settling attempt (nulls: nothing is). */
interface ListedRow {
  path: string | null;
  uri: string | null;
  address: string | null;
  size: DbNumeric | null;
}

const notListed = (runId: string, path: string) =>
  new ControlPlaneError('not_found', `run ${runId} lists no artifact ${JSON.stringify(path)}`, {
    id: runId,
    path,
  });

/** A listed path's stored address and size, or `not_found` when the store does not hold what the run lists. */
function stored(runId: string, row: ListedRow & { path: string }): { address: string; size: number } {
  const { address, size, uri } = row;
  if (address === null || size === null || uri !== `artifact:${address}`) throw notListed(runId, row.path);
  return { address, size: numeric(size) };
}

export async function runArtifact(
  db: Executor,
  backend: ObjectBackend,
  tenant: string,
  runId: string,
  path: string,
): Promise<ArtifactBody> {
  // One statement: the listing's entry for this path (found in the database — a run of thousands of files
  // lists them all, and reading its whole outputs per fetch made fetching them all quadratic) and the file
  // stored under the settling attempt's lease.
  const found = await db
    .selectFrom('runs as r')
    .leftJoin('runner_artifacts as a', (j) =>
      j.onRef('a.run_id', '=', 'r.id').onRef('a.epoch', '=', 'r.attempt').on('a.path', '=', path),
    )
    .select(['a.address', 'a.size'])
    .select(
      sql<string | null>`jsonb_path_query_first(r.outputs, '$.artifacts[*] ? (@.name == $p)',
        jsonb_build_object('p', ${path}::text)) ->> 'uri'`.as('uri'),
    )
    .where('r.tenant_id', '=', tenant)
    .where('r.id', '=', runId)
    .executeTakeFirst();
  if (!found) throw notFound('run', runId);
  const { address, size } = stored(runId, { ...found, path });
  const body = await mapStoreErrors(() => readArtifact(backend, tenant, address));
  return { address, size, body };
}

/** Whether an archive holds `path` as it is (a listing from before uploads were held to that form may not be). */
function archivable(path: string): boolean {
  try {
    return normalizeEntryPath(path) === path;
  } catch {
    return false;
  }
}

/** Archive files up to this size are read whole (one read, verified) when opened ahead of their turn. */
const WHOLE_READ_BYTES = 64 * 1024;

/**
 * A stored artifact's bytes for the archive: a small one read whole and verified when opened (the archive opens a
 * few ahead, so many small files overlap their reads); a large one streamed, and opened only when its turn comes.
 */
function openStored(backend: ObjectBackend, tenant: string, address: string, size: number) {
  if (size <= WHOLE_READ_BYTES)
    return mapStoreErrors(() => readArtifactBytes(backend, tenant, address)).then((bytes) => [bytes]);
  return (async function* () {
    yield* await mapStoreErrors(() => readArtifact(backend, tenant, address));
  })();
}

/** Regular files in an archive of artifacts are read-only for the group and others, as `out/` files usually are. */
const ARCHIVE_MODE = 0o644;

/**
 * Every artifact the run lists, as the canonical tar archive (`@everdict/placement`'s `streamTar`: sorted by path,
 * mtime 0, no owners — the same listing gives the same bytes). One statement finds the listing and what is stored
 * for each path; a listed path the store does not hold is `not_found` before any byte. Each file is opened only
 * when its turn comes, so the archive is never held whole; bytes that do not match their address end the archive
 * before its end blocks.
 */
export async function runArtifactArchive(
  db: Executor,
  backend: ObjectBackend,
  tenant: string,
  runId: string,
): Promise<{ files: StreamedFile[]; body: AsyncIterable<Uint8Array> }> {
  const { rows } = await sql<ListedRow>`
    select e.item ->> 'name' as path, e.item ->> 'uri' as uri, a.address, a.size
    from runs r
    left join lateral jsonb_array_elements(
      case when jsonb_typeof(r.outputs -> 'artifacts') = 'array' then r.outputs -> 'artifacts' else '[]'::jsonb end
    ) with ordinality as e(item, n) on true
    left join runner_artifacts a on a.run_id = r.id and a.epoch = r.attempt and a.path = e.item ->> 'name'
    where r.tenant_id = ${tenant} and r.id = ${runId}
    order by e.n`.execute(db);
  if (rows.length === 0) throw notFound('run', runId);
  const files: StreamedFile[] = rows
    .filter((row): row is ListedRow & { path: string } => row.path !== null)
    .map((row) => {
      const { address, size } = stored(runId, row);
      if (!archivable(row.path))
        throw new ControlPlaneError(
          'conflict',
          `run ${runId} lists ${JSON.stringify(row.path)}, a path no archive holds as it is: fetch it alone (GET /runs/${runId}/artifact?path=)`,
          { id: runId, path: row.path },
        );
      return {
        path: row.path,
        mode: ARCHIVE_MODE,
        size,
        open: () => openStored(backend, tenant, address, size),
      };
    });
  return { files, body: streamTar(files) };
}
