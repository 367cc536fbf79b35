// /runs — submit any kind through the one gate, list/filter, read, cancel (cascading), the run's
// record (verified on read) and its facts (JSON page, or SSE when asked for text/event-stream).
import { createRoute, z } from '@hono/zod-openapi';
import { ControlPlaneError } from '../errors.js';
import type { RecordView } from '../ledger/views.js';
import { markParsedCreate, safeParseCreate } from '../services/parsed-create.js';
import { CreateRunInput, EventPosition, ListRunsQuery, RequestId } from '../services/types.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, json } from './openapi.js';
import { errorToProblem, ProblemSchema, problemResponses, validationProblem } from './problem.js';
import {
  AdmissionSchema,
  CancelledSchema,
  CreatedRunSchema,
  EventListSchema,
  IdParam,
  RecordSchema,
  RunCancelBody,
  RunPageSchema,
  RunSchema,
  ScoreSchema,
} from './schemas.js';
import { streamRunEvents, wantsEventStream } from './sse.js';

export const CausedByHeader = z.object({
  'x-everdict-caused-by': z
    .string()
    .min(1)
    .max(200)
    .optional()
    .openapi({ description: 'The run that caused this one (same tenant); the run draws from its envelope.' }),
});

const CreateRunHeaders = CausedByHeader.extend({
  'idempotency-key': RequestId.optional().openapi({
    description:
      "The create's idempotency key, as the body's `requestId` (the same rules; both given: they must be equal). " +
      'A repeated key returns the first run (admission decision `duplicate`) instead of creating a second.',
  }),
});

/** The body with the `Idempotency-Key` header as its `requestId`; a body that names another one is refused. */
function withIdempotencyKey<B extends { requestId?: string | undefined }>(
  body: B,
  key: string | undefined,
): B {
  if (key === undefined || body.requestId === key) return body;
  if (body.requestId !== undefined)
    throw new ControlPlaneError('bad_request', "the Idempotency-Key header and the body's requestId differ", {
      header: key,
      requestId: body.requestId,
    });
  return { ...body, requestId: key };
}

const createRun = createRoute({
  method: 'post',
  path: '/runs',
  tags: ['runs'],
  summary: 'Submit a run of any kind; it passes the one admission gate.',
  security: API_KEY_SECURITY,
  request: {
    headers: CreateRunHeaders,
    body: { required: true, content: { 'application/json': { schema: CreateRunInput } } },
  },
  responses: {
    201: json(CreatedRunSchema, 'Queued (or the earlier run, for a repeated requestId).'),
    ...problemResponses(400, 401, 402, 404, 409, 413, 415, 429),
  },
});

export const RunsBatchBody = z
  .object({
    runs: z
      .array(z.unknown().openapi({ description: 'A run spec (CreateRun), validated on its own.' }))
      .min(1)
      .max(1000)
      .openapi({ description: '1 to 1,000 run specs, decided by the gate in this order.' }),
  })
  .openapi('CreateRunsBatch');

export const RunsBatchResult = z
  .object({
    results: z.array(
      z.union([
        z.object({ status: z.literal(201), run: RunSchema, admission: AdmissionSchema }),
        z.object({ status: z.number().int().min(400).max(599), problem: ProblemSchema }),
      ]),
    ),
  })
  .openapi('RunsBatchResult');

const createRunsBatch = createRoute({
  method: 'post',
  path: '/runs:batch',
  tags: ['runs'],
  summary: 'Submit up to 1,000 runs: one gate decision each, in input order; a result per item.',
  security: API_KEY_SECURITY,
  request: { body: { required: true, content: { 'application/json': { schema: RunsBatchBody } } } },
  responses: {
    200: json(
      RunsBatchResult,
      'One result per spec, in input order: 201 with the run and its admission, or the refusal as a problem.',
    ),
    ...problemResponses(400, 401, 413, 415),
  },
});

const listRuns = createRoute({
  method: 'get',
  path: '/runs',
  tags: ['runs'],
  summary: 'List runs, newest first; filter by kind, status, lifetime, group, causer, creator.',
  security: API_KEY_SECURITY,
  request: { query: ListRunsQuery },
  responses: {
    200: json(RunPageSchema, 'One page; pass nextCursor as cursor for the next.'),
    ...problemResponses(400, 401),
  },
});

const getRun = createRoute({
  method: 'get',
  path: '/runs/{id}',
  tags: ['runs'],
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: { 200: json(RunSchema, 'The run.'), ...problemResponses(400, 401, 404) },
});

const RunScoresSchema = z
  .object({
    scores: z
      .array(ScoreSchema)
      .openapi({ description: 'Oldest first; a re-score names the scoring it re-does.' }),
  })
  .openapi('RunScores');

const getRunScores = createRoute({
  method: 'get',
  path: '/runs/{id}/scores',
  tags: ['runs'],
  summary: 'Every verdict phase 2 gave the run, with its detail: why each grader passed or failed it.',
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: { 200: json(RunScoresSchema, "The run's scores."), ...problemResponses(400, 401, 404) },
});

const cancelRun = createRoute({
  method: 'post',
  path: '/runs/{id}/cancel',
  tags: ['runs'],
  summary: 'Cancel a run and its non-terminal causal descendants.',
  security: API_KEY_SECURITY,
  request: {
    params: IdParam,
    body: { required: false, content: { 'application/json': { schema: RunCancelBody } } },
  },
  responses: { 200: json(CancelledSchema, 'Cancelled.'), ...problemResponses(400, 401, 404, 409, 415) },
});

export const RecordQuery = z.object({
  view: z.enum(['summary', 'wire']).default('summary').openapi({
    description: '`wire`: the bare sandbox.runrecord/1 wire form, ready for `everdict-runrecord verify`.',
  }),
});

const getRecord = createRoute({
  method: 'get',
  path: '/runs/{id}/record',
  tags: ['runs'],
  summary: "The run record's wire form, verified from genesis on this read.",
  security: API_KEY_SECURITY,
  request: { params: IdParam, query: RecordQuery },
  responses: {
    200: json(RecordSchema, 'Record and verification summary (or, with view=wire, the wire form alone).'),
    ...problemResponses(400, 401, 404, 500),
  },
});

export const EventsQuery = z.object({
  after: EventPosition.optional().openapi({
    description: 'Outbox position to resume after (an event id; at most the bigint maximum).',
  }),
  limit: z.coerce.number().int().min(1).max(1000).default(200),
});

/** SSE resumption: `Last-Event-ID` is an event id this API sent (validated like `after`). */
const LastEventIdHeader = z.object({
  'last-event-id': EventPosition.optional().openapi({
    description: 'With Accept: text/event-stream: resume after this event id (overrides `after`).',
  }),
});

const runEvents = createRoute({
  method: 'get',
  path: '/runs/{id}/events',
  tags: ['runs'],
  summary: "The run's facts, oldest first. With Accept: text/event-stream: replay, then tail live (SSE).",
  security: API_KEY_SECURITY,
  request: { params: IdParam, query: EventsQuery, headers: LastEventIdHeader },
  responses: {
    200: {
      description: 'A page of facts (JSON), or an SSE stream whose event ids are outbox positions.',
      content: {
        'application/json': { schema: EventListSchema },
        'text/event-stream': { schema: z.string() },
      },
    },
    ...problemResponses(400, 401, 404),
  },
});

export function runRoutes(deps: RouteDeps) {
  const { services } = deps;
  const app = createRouter();

  app.openapi(createRun, async (c) => {
    const headers = c.req.valid('header');
    // Parsed by the route (the header by its schema too): not again by the lifecycle.
    const input = markParsedCreate(withIdempotencyKey(c.req.valid('json'), headers['idempotency-key']));
    const causedByRunId = headers['x-everdict-caused-by'];
    const created = await services.runs.create(
      c.get('principal'),
      input,
      causedByRunId ? { causedByRunId } : {},
    );
    return c.json(created, 201);
  });

  app.openapi(createRunsBatch, async (c) => {
    // Each spec is validated on its own, as POST /runs validates one (a 400 validation_failed for that item);
    // the valid ones go to the gate together, in input order.
    const parsed = c.req.valid('json').runs.map((spec) => safeParseCreate(spec));
    const valid = parsed.flatMap((p) => (p.success ? [p.data] : []));
    const out = valid.length > 0 ? await services.runs.createMany(c.get('principal'), valid) : [];
    let next = 0;
    const results = parsed.map((p) => {
      if (!p.success) {
        const problem = validationProblem(p.error);
        return { status: problem.status, problem };
      }
      const o = out[next++];
      if (o && 'created' in o) return { status: 201 as const, ...o.created };
      const mapped = errorToProblem(o?.error);
      if (mapped.unexpected) c.get('log').error({ err: o?.error }, 'a batch item failed');
      return { status: mapped.problem.status, problem: mapped.problem };
    });
    return c.json({ results }, 200);
  });

  app.openapi(listRuns, async (c) =>
    c.json(await services.runs.list(c.get('principal'), c.req.valid('query')), 200),
  );

  app.openapi(getRun, async (c) =>
    c.json(await services.runs.get(c.get('principal'), c.req.valid('param').id), 200),
  );

  app.openapi(getRunScores, async (c) =>
    c.json({ scores: await services.runs.scores(c.get('principal'), c.req.valid('param').id) }, 200),
  );

  app.openapi(cancelRun, async (c) => {
    const body = c.req.valid('json');
    const result = await services.runs.cancel(c.get('principal'), c.req.valid('param').id, body.reason);
    return c.json(result, 200);
  });

  app.openapi(getRecord, async (c) => {
    const record = await services.runs.record(c.get('principal'), c.req.valid('param').id);
    // The bare wire form (documented on the query parameter); the typed response is the summary shape.
    if (c.req.valid('query').view === 'wire') return c.json(record.wire as RecordView, 200);
    return c.json(record, 200);
  });

  app.openapi(runEvents, async (c) => {
    const principal = c.get('principal');
    const { id } = c.req.valid('param');
    const { after, limit } = c.req.valid('query');
    if (wantsEventStream(c.req.header('accept'))) {
      const from = c.req.valid('header')['last-event-id'] ?? after;
      return streamRunEvents(c, deps, principal, id, from);
    }
    const page = await services.runs.events(principal, id, { ...(after ? { after } : {}), limit });
    return c.json(page, 200);
  });

  return app;
}
