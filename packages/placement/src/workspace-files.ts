// The files a sandbox left under a directory of its workspace, read one at a time as they stream out of an
// archiver running in the sandbox — never the whole archive in memory (a snapshot is held whole: `snapshot`).
// Each driver starts its archiver its own way (`WorkspaceArchive`); `filesOfArchive` turns that tar stream
// into the `WorkspaceFile`s `Driver.files` yields.
import { Readable } from 'node:stream';
import { extract } from 'tar-stream';
import { z } from 'zod';
import { PlacementError } from './errors.js';
import { MODE_MASK, normalizeEntryPath } from './tar/tar-entry.js';

/** A regular file under the directory `Driver.files` was asked for. */
export interface WorkspaceFile {
  /** Relative to that directory, `/`-separated. */
  readonly path: string;
  readonly size: number;
  readonly mode: number;
  /** The file's bytes. Read it (or leave it) before asking for the next file: the archive is one stream. */
  readonly content: Readable;
}

/** A directory of the workspace: relative, no `.` or `..` segment, no empty segment. */
export const WorkspaceDir = z
  .string()
  .min(1)
  .max(4096)
  .refine(
    (dir) => dir.split('/').every((s) => s !== '' && s !== '.' && s !== '..'),
    'a workspace-relative directory: no leading or doubled "/", no "." or ".." segment',
  );

/** An archiver's tar on `stream`; `done` settles when it has exited (rejecting with a PlacementError); `stop` kills it. */
export interface WorkspaceArchive {
  readonly stream: Readable;
  readonly done: Promise<void>;
  stop(): void;
}

/**
 * The regular files of `archive`, in its order; directories, symlinks, hard links and special files are not
 * files and are passed over. An archive broken off (the consumer stops early, or throws) stops its archiver.
 */
export async function* filesOfArchive(archive: WorkspaceArchive): AsyncGenerator<WorkspaceFile> {
  archive.done.catch(() => undefined); // awaited below, once the archive has been read to its end
  const ex = extract();
  archive.stream.on('error', (e: Error) => ex.destroy(e));
  archive.stream.pipe(ex);
  let complete = false;
  try {
    for await (const entry of ex) {
      const h = entry.header;
      if (h.type === 'file' || h.type === 'contiguous-file') {
        const content = contentOf(entry as unknown as ArchiveEntry); // streamx's generic event types, narrowed
        yield {
          path: normalizeEntryPath(h.name),
          size: h.size ?? 0,
          mode: (h.mode ?? 0) & MODE_MASK,
          content: content.stream,
        };
        content.release();
      }
      entry.resume(); // what the consumer left unread: the next entry follows it in the stream
    }
    await archive.done;
    complete = true;
  } catch (e) {
    if (e instanceof PlacementError) throw e;
    throw new PlacementError(
      'spawn_failed',
      `the workspace's files could not be read: ${(e as Error).message}`,
    );
  } finally {
    if (!complete) {
      archive.stop();
      ex.destroy();
    }
  }
}

/** What of a tar-stream entry (a streamx Readable) `contentOf` uses. */
interface ArchiveEntry {
  on(event: string, listener: (arg: never) => void): unknown;
  removeListener(event: string, listener: (arg: never) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

/** The archive's current entry as a Node stream, with back-pressure; `release` lets the archive go on without it. */
function contentOf(entry: ArchiveEntry): { stream: Readable; release(): void } {
  const onData = (chunk: Buffer) => {
    if (!stream.push(chunk)) entry.pause();
  };
  const onEnd = () => stream.push(null);
  const onError = (e: Error) => stream.destroy(e);
  const release = () => {
    entry.removeListener('data', onData);
    entry.removeListener('end', onEnd);
    entry.removeListener('error', onError);
  };
  // A consumer that destroys its stream (an upload refused mid-body) leaves the entry to be drained, never
  // destroyed: destroying a tar entry would stall the archive behind it.
  const stream = new Readable({
    read: () => void entry.resume(),
    destroy: (err, callback) => {
      release();
      callback(err);
    },
  });
  entry.on('data', onData);
  entry.on('end', onEnd);
  entry.on('error', onError);
  return { stream, release };
}

/** What `files` yields on a driver without a filesystem: its first step refuses with `refusal`. */
export function refusedFiles(refusal: () => PlacementError): AsyncIterable<WorkspaceFile> {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(refusal()) }),
  };
}
