import { decodeOtlpRequest, encodeOtlpResponse } from '@everdict/trajectory-store';
import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { requireRole } from '../auth/middleware.js';
import { revokedEvent, watchRevocation } from '../auth/revocation.js';
import { ControlPlaneError, isControlPlaneError } from '../errors.js';
import { fromStoreError } from '../trajectory/errors.js';
import type { TrajectoryService } from '../trajectory/service.js';
import type { RouteDeps } from './deps.js';
import type { AppEnv } from './env.js';
import { API_KEY_SECURITY, createRouter } from './openapi.js';
import { ProblemError, problem, problemResponses } from './problem.js';
import { IdParam } from './schemas.js';
import { wantsEventStream } from './sse.js';

import {
  DeletionSchema,
  DeletionsQuery,
  ImportedQuery,
  ImportedSchema,
  json,
  OtlpJsonBody,
  PolicySchema,
  ScoreBody,
  StreamHeaders,
  StreamQuery,
  TraceEventSchema,
  TrajectoryPageQuery,
  TrajectoryPageSchema,
  TrajectoryScoreSchema,
} from './trajectory-schemas.js';

const runTrajectory = createRoute({
  method: 'get',
  path: '/runs/{id}/trajectory',
  tags: ['trajectories'],
  summary: "A page of the run's trajectory (live or sealed), offset counted in events.",
  security: API_KEY_SECURITY,
  request: { params: IdParam, query: TrajectoryPageQuery },
  responses: { 200: json(TrajectoryPageSchema, 'One page.'), ...problemResponses(400, 401, 404, 503) },
});

const runTrajectoryStream = createRoute({
  method: 'get',
  path: '/runs/{id}/trajectory/stream',
  tags: ['trajectories'],
  summary:
    "With Accept: text/event-stream, tails the run's trajectory over SSE (event `trajectory.event`, id = offset; ends once sealed, or once a run with no event ended); otherwise one JSON page from the same position.",
  description:
    'The stream closes with one `end` event, `{runId, status, runStatus?}`: `status: "sealed"` — the trajectory ' +
    'was sealed and every event from the position was sent; `status: "ended"` — the run ended without recording ' +
    'an event, so there is no trajectory and nothing was sealed (`runStatus` is its terminal status; both carry ' +
    'it); `status: "limit"` — `limit` events were sent (resume with Last-Event-ID). A store failure sends an ' +
    '`error` event `{code}` instead, a revoked key `{code: "unauthorized"}`; a draining process closes it without one.',
  security: API_KEY_SECURITY,
  request: { params: IdParam, query: StreamQuery, headers: StreamHeaders },
  responses: {
    200: {
      description: 'An SSE stream, or (without Accept: text/event-stream) one page.',
      content: {
        'text/event-stream': { schema: z.string() },
        'application/json': { schema: TrajectoryPageSchema },
      },
    },
    ...problemResponses(400, 401, 404, 503),
  },
});

const postTraces = createRoute({
  method: 'post',
  path: '/v1/traces',
  tags: ['trajectories'],
  summary:
    'OTLP/HTTP trace export: spans of a live run (resource `everdict.run_id`) append to it; others are imported.',
  security: API_KEY_SECURITY,
  request: {
    body: {
      required: true,
      content: {
        'application/json': { schema: OtlpJsonBody },
        'application/x-protobuf': { schema: z.string().openapi({ format: 'binary' }) },
      },
    },
  },
  responses: {
    200: {
      description: 'ExportTraceServiceResponse, in the request’s encoding.',
      content: {
        'application/json': {
          schema: z.object({}).catchall(z.unknown()).openapi('ExportTraceServiceResponse'),
        },
        'application/x-protobuf': { schema: z.string().openapi({ format: 'binary' }) },
      },
    },
    ...problemResponses(400, 401, 409, 413, 415, 503),
  },
});

const listTrajectories = createRoute({
  method: 'get',
  path: '/trajectories',
  tags: ['trajectories'],
  summary: 'Imported trajectories of one external trace (every copy, oldest pull first).',
  security: API_KEY_SECURITY,
  request: { query: ImportedQuery },
  responses: {
    200: json(z.object({ items: z.array(ImportedSchema) }).openapi('ImportedTrajectoryList'), 'The copies.'),
    ...problemResponses(400, 401, 503),
  },
});

const getTrajectory = createRoute({
  method: 'get',
  path: '/trajectories/{id}',
  tags: ['trajectories'],
  summary: 'One imported trajectory (provenance, digest, scores) and a page of its events.',
  security: API_KEY_SECURITY,
  request: { params: IdParam, query: TrajectoryPageQuery },
  responses: {
    200: json(
      z
        .object({
          trajectory: ImportedSchema,
          items: z.array(TraceEventSchema),
          nextOffset: z.number().int(),
        })
        .openapi('ImportedTrajectoryPage'),
      'The trajectory and a page of its events.',
    ),
    ...problemResponses(400, 401, 404, 503),
  },
});

const scoreTrajectory = createRoute({
  method: 'post',
  path: '/trajectories/{id}/score',
  tags: ['trajectories'],
  summary: "Scores our copy of an imported trajectory with run-model's graders (the scores persist).",
  security: API_KEY_SECURITY,
  request: {
    params: IdParam,
    body: { required: true, content: { 'application/json': { schema: ScoreBody } } },
  },
  responses: {
    200: json(
      z.object({ scores: z.array(TrajectoryScoreSchema) }).openapi('TrajectoryScores'),
      'The scores.',
    ),
    ...problemResponses(400, 401, 404, 413, 415, 503),
  },
});

const getPolicy = createRoute({
  method: 'get',
  path: '/trajectory-policy',
  tags: ['trajectories'],
  summary: "The tenant's trajectory retention policy.",
  security: API_KEY_SECURITY,
  responses: { 200: json(PolicySchema, 'The policy.'), ...problemResponses(401, 503) },
});

const putPolicy = createRoute({
  method: 'put',
  path: '/trajectory-policy',
  tags: ['trajectories'],
  summary: 'Sets `trajectoryRetentionDays` (admin key).',
  security: API_KEY_SECURITY,
  middleware: [requireRole('admin')] as const, // before the body is validated (auth/middleware.ts)
  request: { body: { required: true, content: { 'application/json': { schema: PolicySchema } } } },
  responses: {
    200: json(PolicySchema, 'The policy now.'),
    ...problemResponses(400, 401, 403, 413, 415, 503),
  },
});

const listDeletions = createRoute({
  method: 'get',
  path: '/trajectory-deletions',
  tags: ['trajectories'],
  summary: 'What retention deleted, oldest first (one record per deleted trajectory).',
  security: API_KEY_SECURITY,
  request: { query: DeletionsQuery },
  responses: {
    200: json(z.object({ items: z.array(DeletionSchema) }).openapi('TrajectoryDeletions'), 'Deletions.'),
    ...problemResponses(400, 401, 503),
  },
});

/** The service, or a 503 problem when this app has no trajectory store. */
export function need(t: TrajectoryService | null | undefined): TrajectoryService {
  if (!t) throw new ProblemError(problem('storage_unavailable', 'no trajectory store is configured'));
  return t;
}

/** Store and storage refusals as problems (the 503s are a dependency that is down, not a defect). */
export async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const err = fromStoreError(e);
    if (isControlPlaneError(err) && (err.code === 'storage_unavailable' || err.code === 'integrity_failed'))
      throw new ProblemError(problem(err.code, err.message));
    throw err;
  }
}

const OTLP_TYPES = /^application\/(x-protobuf|protobuf|json)\s*(;|$)/i;

export function trajectoryRoutes(deps: RouteDeps) {
  const app = createRouter();
  const svc = () => need(deps.trajectories);

  app.openapi(runTrajectory, (c) =>
    guarded(async () => {
      const page = await svc().runPage(c.get('principal'), c.req.valid('param').id, c.req.valid('query'));
      return c.json(page, 200);
    }),
  );

  app.openapi(runTrajectoryStream, (c) =>
    guarded(async () => {
      const { id } = c.req.valid('param');
      const { offset, limit } = c.req.valid('query');
      const last = c.req.valid('header')['last-event-id'];
      const from = last === undefined ? offset : Number(last) + 1;
      // Without Accept: text/event-stream the same position answers as one JSON page (as /runs/:id/events).
      if (!wantsEventStream(c.req.header('accept')))
        return c.json(
          await svc().runPage(c.get('principal'), id, { offset: from, limit: Math.min(limit, 1000) }),
          200,
        ) as never;
      return streamTrajectory(c, deps, svc(), id, from, limit);
    }),
  );

  app.openapi(postTraces, async (c) => {
    const type = c.req.header('content-type') ?? '';
    if (!OTLP_TYPES.test(type))
      throw new ControlPlaneError(
        'unsupported_media_type',
        'OTLP/HTTP bodies are application/x-protobuf or application/json',
      );
    const format = /json/i.test(type) ? 'json' : 'protobuf';
    const body = new Uint8Array(await c.req.arrayBuffer());
    return guarded(async () => {
      const spans = decodeOtlpRequest(type, body);
      await svc().ingestOtlp(c.get('principal'), spans);
      const bytes = encodeOtlpResponse(format);
      return c.body(bytes as Uint8Array<ArrayBuffer>, 200, {
        'content-type': format === 'json' ? 'application/json' : 'application/x-protobuf',
      }) as never;
    });
  });

  app.openapi(listTrajectories, (c) =>
    guarded(async () => c.json(await svc().listImported(c.get('principal'), c.req.valid('query')), 200)),
  );

  app.openapi(getTrajectory, (c) =>
    guarded(async () =>
      c.json(await svc().getImported(c.get('principal'), c.req.valid('param').id, c.req.valid('query')), 200),
    ),
  );

  app.openapi(scoreTrajectory, (c) =>
    guarded(async () =>
      c.json(await svc().score(c.get('principal'), c.req.valid('param').id, c.req.valid('json')), 200),
    ),
  );

  app.openapi(getPolicy, (c) => guarded(async () => c.json(await svc().policy(c.get('principal')), 200)));
  app.openapi(putPolicy, (c) =>
    guarded(async () => c.json(await svc().setPolicy(c.get('principal'), c.req.valid('json')), 200)),
  );
  app.openapi(listDeletions, (c) =>
    guarded(async () => c.json(await svc().deletions(c.get('principal'), c.req.valid('query')), 200)),
  );

  return app;
}

/**
 * SSE tail: every event from `from` (id = its offset), then each new one, until the trajectory is sealed
 * and read to its end, or the run ended without an event (an `end` event saying which), `limit` events were
 * sent, the client leaves, or the process drains.
 * The run is resolved first, so an unknown (or another tenant's) run is a 404 problem, not an empty stream.
 */
async function streamTrajectory(
  c: Context<AppEnv>,
  deps: RouteDeps,
  svc: TrajectoryService,
  runId: string,
  from: number,
  limit: number,
): Promise<Response> {
  const principal = c.get('principal');
  await svc.runs.head(principal.tenantId, runId);
  return streamSSE(c, async (stream) => {
    const abort = new AbortController();
    const stop = () => abort.abort();
    stream.onAbort(stop);
    deps.lifecycle.signal.addEventListener('abort', stop, { once: true });
    // A revoked key's tail ends too (auth/revocation.ts): an `error` event `{code: "unauthorized"}`, then close.
    const revocation = watchRevocation(c);
    revocation.signal.addEventListener('abort', stop, { once: true });
    const beat = setInterval(() => {
      void stream.write(': keep-alive\n\n').catch(stop);
    }, deps.heartbeatMs);
    let sent = 0;
    let end: EndEvent | null = null;
    try {
      const tail = await svc.runTail(principal, runId, { offset: from, signal: abort.signal });
      for await (const { offset, event } of tail) {
        await stream.writeSSE({ id: String(offset), event: 'trajectory.event', data: JSON.stringify(event) });
        if (++sent >= limit) break;
      }
      if (sent >= limit) end = { runId, status: 'limit' };
      else if (!abort.signal.aborted) end = await howItEnded(svc, principal.tenantId, runId);
    } catch (e) {
      if (!abort.signal.aborted) {
        const err = fromStoreError(e);
        const code = isControlPlaneError(err) ? err.code : 'storage_unavailable';
        await stream.writeSSE({ event: 'error', data: JSON.stringify({ code }) }).catch(() => undefined);
      }
    } finally {
      clearInterval(beat);
      deps.lifecycle.signal.removeEventListener('abort', stop);
      revocation.stop();
    }
    if (revocation.signal.aborted) await stream.writeSSE(revokedEvent);
    else if (end) await stream.writeSSE({ event: 'end', data: JSON.stringify(end) });
  });
}

/** The data of the stream's closing `end` event (the route's description says what each status means). */
type EndEvent =
  | { runId: string; status: 'limit' }
  | { runId: string; status: 'sealed' | 'ended'; runStatus: string };

/**
 * Why a tail that was not cut short ran out, from storage: the trajectory is `sealed` (read to its end), or
 * the run `ended` with nothing recorded — no trajectory exists, and nothing was sealed.
 */
async function howItEnded(svc: TrajectoryService, tenant: string, runId: string): Promise<EndEvent> {
  const run = await svc.runs.head(tenant, runId);
  const stored = await svc.runs.store.head(tenant, runId);
  return { runId, status: stored.status === 'sealed' ? 'sealed' : 'ended', runStatus: run.status };
}
