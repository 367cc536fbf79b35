// The activity console (`GET /console`, one page, no build step) and the reads it needs that the API did
// not have: `GET /envelopes` (the tenant's delegated envelopes: caps, spent, in flight, the run that opened
// each), `GET /tenant/queue` (admission's queue and caps for the tenant), and `GET /console/feed`, the
// tenant's facts live as Server-Sent Events (every run of every kind; ids are outbox positions, so a client
// resumes with `after` / Last-Event-ID). The page sends the API key as `Authorization: Bearer` on every call,
// the SSE feeds included (it reads them with fetch streaming, not EventSource).
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { requireApiKey } from '../auth/middleware.js';
import { revokedEvent, watchRevocation } from '../auth/revocation.js';
import { ControlPlaneError } from '../errors.js';
import type { RouteDeps } from '../http/deps.js';
import type { AppEnv } from '../http/env.js';
import { FeedBuffer } from '../http/feed-buffer.js';
import { API_KEY_SECURITY, createRouter } from '../http/openapi.js';
import { problemResponses } from '../http/problem.js';
import { eventPosition } from '../services/events-feed.js';
import { asset } from './assets.js';
import type { ConsoleSource } from './source.js';

const EnvelopeSchema = z
  .object({
    id: z.string(),
    parentId: z.string().nullable(),
    openedBy: z.string().nullable(),
    caps: z.object({
      usd: z.number().nullable(),
      tokens: z.number().nullable(),
      runs: z.number().nullable(),
      inFlight: z.number(),
    }),
    spent: z.object({ usd: z.number(), tokens: z.number(), runs: z.number() }),
    inFlight: z.number(),
  })
  .openapi('Envelope');

const QueueSchema = z
  .object({
    queued: z.object({
      total: z.number(),
      interactive: z.number(),
      background: z.number(),
      batch: z.number(),
    }),
    running: z.number(),
    sessions: z.number(),
    caps: z.object({ maxQueued: z.number(), maxConcurrent: z.number() }),
    queuedByKind: z.record(z.string(), z.number()),
  })
  .openapi('TenantQueue');

const listEnvelopes = createRoute({
  method: 'get',
  path: '/envelopes',
  tags: ['tenants'],
  summary:
    "The tenant's delegated envelopes, newest first: caps, spent, in flight, the run that opened each.",
  security: API_KEY_SECURITY,
  request: { query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(100) }) },
  responses: {
    200: {
      description: 'Envelopes.',
      content: { 'application/json': { schema: z.object({ items: z.array(EnvelopeSchema) }) } },
    },
    ...problemResponses(400, 401, 503),
  },
});

const tenantQueue = createRoute({
  method: 'get',
  path: '/tenant/queue',
  tags: ['tenants'],
  summary: "The tenant's admission queue: queued by class and kind, running, sessions, caps.",
  security: API_KEY_SECURITY,
  responses: {
    200: { description: 'The queue.', content: { 'application/json': { schema: QueueSchema } } },
    ...problemResponses(401, 503),
  },
});

const FeedQuery = z.object({ after: z.string().max(20).optional() });

export function consoleRoutes(deps: RouteDeps, source: ConsoleSource | undefined) {
  const app = createRouter();
  const keyed = requireApiKey(deps.services.auth);
  app.use('/envelopes', keyed);
  app.use('/console/feed', keyed);
  const need = (): ConsoleSource => {
    if (!source)
      throw new ControlPlaneError('storage_unavailable', 'this control plane has no console source');
    return source;
  };

  app.openapi(listEnvelopes, async (c) => {
    const items = await need().envelopes(c.get('principal').tenantId, c.req.valid('query').limit);
    return c.json({ items }, 200);
  });
  app.openapi(tenantQueue, async (c) => c.json(await need().queue(c.get('principal').tenantId), 200));

  const page = (c: Context<AppEnv>, name: string) => {
    const a = asset(name);
    if (!a) throw new ControlPlaneError('route_not_found', `no console file ${name}`);
    return c.body(a.body as Uint8Array<ArrayBuffer>, 200, {
      'content-type': a.type,
      'cache-control': 'no-cache',
    });
  };
  app.get('/console', (c) => page(c, 'index.html'));
  app.get('/console/assets/:name', (c) => page(c, c.req.param('name')));

  app.get('/console/feed', async (c) => {
    const q = FeedQuery.safeParse(c.req.query());
    const after = eventPosition(c.req.header('last-event-id') ?? (q.success ? q.data.after : undefined));
    const principal = c.get('principal');
    return streamSSE(c, async (stream) => {
      const buffer = new FeedBuffer();
      const { poke } = buffer;
      const sub = buffer.feed(
        await deps.services.events.subscribe(principal, after === undefined ? {} : { after }, buffer.push),
      );
      // The feed has no end of its own: it ends when the client leaves, the process drains, or the key is
      // revoked (an `error` event `{code: "unauthorized"}` first).
      const revocation = watchRevocation(c);
      stream.onAbort(poke);
      deps.lifecycle.signal.addEventListener('abort', poke, { once: true });
      revocation.signal.addEventListener('abort', poke, { once: true });
      try {
        await stream.writeSSE({ event: 'ready', data: JSON.stringify({ tenant: principal.tenantId }) });
        while (
          !stream.aborted &&
          !stream.closed &&
          !deps.lifecycle.signal.aborted &&
          !revocation.signal.aborted
        ) {
          const next = buffer.shift();
          if (next) {
            await stream.writeSSE({ id: next.id, event: next.kind, data: JSON.stringify(next) });
            continue;
          }
          if (await buffer.idle(deps.heartbeatMs)) await stream.write(': keep-alive\n\n');
        }
      } finally {
        deps.lifecycle.signal.removeEventListener('abort', poke);
        revocation.signal.removeEventListener('abort', poke);
        revocation.stop();
        await sub.close();
      }
      if (revocation.signal.aborted) await stream.writeSSE(revokedEvent);
    });
  });

  return app;
}
