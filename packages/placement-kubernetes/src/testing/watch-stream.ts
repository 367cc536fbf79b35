// A watch response: one JSON `{type, object}` per line over a chunked HTTP/1.1 body, from a resourceVersion
// on; BOOKMARK events (when asked for) carry only the version reached; a version older than the history
// answers a single ERROR event whose object is a 410 Expired Status, as the apiserver's watch cache does.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ObjectStore, WatchEvent, WatchFilter } from './object-store.js';
import { groupVersion } from './resources.js';
import { type ApiStatus, StatusError } from './status.js';
import { toTable } from './table.js';

export interface WatchOptions {
  fromResourceVersion: string | undefined;
  bookmarks: boolean;
  bookmarkIntervalMs: number;
  timeoutSeconds: number | undefined;
  table: boolean;
  includeObject: string | null;
  /** Answer with this Status as one ERROR event and end (fault injection: `failWatches`). */
  failWith?: ApiStatus;
}

export interface OpenWatch {
  /** End the stream as an apiserver restart or request timeout does (the client sees a clean end). */
  end(): void;
  /**
   * Go silent, as a stream behind a hung proxy or a wedged apiserver does: no more events, no bookmarks, no
   * end at `timeoutSeconds` — the connection stays open until the client closes it (or `end()`).
   */
  stall(): void;
}

export function serveWatch(
  req: IncomingMessage,
  res: ServerResponse,
  store: ObjectStore,
  filter: WatchFilter,
  options: WatchOptions,
  registry: Set<OpenWatch>,
): void {
  res.writeHead(200, {
    'Content-Type': options.table ? 'application/json;as=Table;v=v1;g=meta.k8s.io' : 'application/json',
    'Transfer-Encoding': 'chunked',
    'Cache-Control': 'no-cache, private',
  });
  res.flushHeaders();
  let firstTable = true;
  let stalled = false;
  const write = (event: { type: string; object: unknown }) => {
    if (!stalled && !res.writableEnded) res.write(`${JSON.stringify(event)}\n`);
  };
  const deliver = (event: WatchEvent) => {
    if (!options.table) return write(event);
    const table = toTable(
      filter.type,
      [event.object],
      String(event.object.metadata.resourceVersion),
      options.includeObject,
      firstTable,
    );
    firstTable = false;
    write({ type: event.type, object: table });
  };

  if (options.failWith) {
    write({ type: 'ERROR', object: options.failWith });
    res.end();
    return;
  }
  let unsubscribe: () => void = () => {};
  try {
    unsubscribe = store.watch(filter, options.fromResourceVersion, deliver);
  } catch (error) {
    if (!(error instanceof StatusError)) throw error;
    write({ type: 'ERROR', object: error.status });
    res.end();
    return;
  }

  let bookmarkTimer: NodeJS.Timeout | undefined;
  let timeoutTimer: NodeJS.Timeout | undefined;
  const quiet = () => {
    unsubscribe();
    clearTimeout(bookmarkTimer);
    clearTimeout(timeoutTimer);
  };
  const watch: OpenWatch = {
    end: () => {
      quiet();
      registry.delete(watch);
      // a stalled stream sends nothing more, not even its end: the connection is cut instead
      if (stalled) res.destroy();
      else if (!res.writableEnded) res.end();
    },
    stall: () => {
      stalled = true;
      quiet();
    },
  };
  registry.add(watch);
  if (options.bookmarks) {
    const bookmark = () => {
      write({
        type: 'BOOKMARK',
        object: {
          kind: filter.type.kind,
          apiVersion: groupVersion(filter.type),
          metadata: { resourceVersion: store.resourceVersion, creationTimestamp: null },
        },
      });
      bookmarkTimer = setTimeout(bookmark, options.bookmarkIntervalMs);
    };
    bookmarkTimer = setTimeout(bookmark, options.bookmarkIntervalMs);
  }
  if (options.timeoutSeconds !== undefined && options.timeoutSeconds > 0) {
    timeoutTimer = setTimeout(() => watch.end(), options.timeoutSeconds * 1000);
  }
  req.on('close', () => watch.end());
  res.on('close', () => watch.end());
}
