// A run's artifacts (the files its command left under `out/`) for a user: one by its path, or all of them as
// one tar archive — the bytes of both hashed as they stream from the store (trajectory/run-artifacts.ts).
import { streamedTarLength } from '@everdict/placement';
import { createRoute, z } from '@hono/zod-openapi';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter } from './openapi.js';
import { problemResponses } from './problem.js';
import { IdParam } from './schemas.js';
import { guarded, need } from './trajectories.js';

const ArtifactQuery = z.object({
  path: z
    .string()
    .min(1)
    .max(4096)
    .openapi({ description: "The artifact's path under `out/`: a `name` of the run's `outputs.artifacts`." }),
});

const runArtifact = createRoute({
  method: 'get',
  path: '/runs/{id}/artifact',
  tags: ['trajectories'],
  summary: "One of the run's artifacts (a file its command left under `out/`), as stored: its bytes.",
  description:
    "Only an artifact the run's outputs list, stored under the lease of the attempt that settled the run. " +
    '`ETag` is its content address (`"blake3:<hex>"`); the bytes are hashed as they stream from the store, and a ' +
    'mismatch with the address ends the response before its last byte (a reader acts on a complete body only).',
  security: API_KEY_SECURITY,
  request: { params: IdParam, query: ArtifactQuery },
  responses: {
    200: {
      description: "The artifact's bytes.",
      content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } },
    },
    ...problemResponses(400, 401, 404, 503),
  },
});

const runArtifactArchive = createRoute({
  method: 'get',
  path: '/runs/{id}/artifacts.tar',
  tags: ['trajectories'],
  summary: 'Every artifact the run lists, as one tar archive.',
  description:
    "The run's `outputs.artifacts`, each file at its listed path, in one POSIX tar (ustar, a pax `path` record " +
    'for a name ustar cannot hold): sorted by path, mode 0644, mtime 0, no owners — the same listing gives the ' +
    'same bytes. `Content-Length` is the whole archive. Each file is hashed as it streams from the store; bytes ' +
    'that do not match their address end the response before the archive does (a reader acts on a complete ' +
    'archive only, and checks each file against the address the run lists). A listed file the store no longer ' +
    'holds is 404 before any byte; a run that lists none answers the empty archive.',
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: {
    200: {
      description: 'The archive.',
      content: { 'application/x-tar': { schema: z.string().openapi({ format: 'binary' }) } },
    },
    ...problemResponses(400, 401, 404, 503),
  },
});

export function artifactRoutes(deps: RouteDeps) {
  const app = createRouter();
  const svc = () => need(deps.trajectories);

  app.openapi(runArtifact, (c) =>
    guarded(async () => {
      const { path } = c.req.valid('query');
      const a = await svc().artifact(c.get('principal'), c.req.valid('param').id, path);
      const name = path.slice(path.lastIndexOf('/') + 1);
      return c.body(ReadableStream.from(a.body) as ReadableStream<Uint8Array<ArrayBuffer>>, 200, {
        'content-type': 'application/octet-stream',
        'content-length': String(a.size),
        etag: `"${a.address}"`,
        'x-content-type-options': 'nosniff',
        'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(name)}`,
      });
    }),
  );

  app.openapi(runArtifactArchive, (c) =>
    guarded(async () => {
      const { id } = c.req.valid('param');
      const a = await svc().artifactArchive(c.get('principal'), id);
      return c.body(ReadableStream.from(a.body) as ReadableStream<Uint8Array<ArrayBuffer>>, 200, {
        'content-type': 'application/x-tar',
        'content-length': String(streamedTarLength(a.files)),
        'x-content-type-options': 'nosniff',
        'content-disposition': `attachment; filename="${id}-artifacts.tar"`,
      });
    }),
  );

  return app;
}
