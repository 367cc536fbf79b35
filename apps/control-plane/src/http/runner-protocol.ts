// The runner's own calls under `/runner/v1/*` (docs/runner-protocol.md, "The runner's calls"), each with its
// credential (`Authorization: Bearer <credential>`, `requireRunner`): leases (long-poll), heartbeats, events,
// artifacts (streamed one at a time, or small ones in a batch), and completions with signed attestations.
// Pairing, the runners list, drain, revoke and the harness registry — what a tenant or the operator does with
// runners — are runners.ts. Bodies are declared loosely here and parsed strictly by the runner service.
import { createRoute, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { CHALLENGE } from '../auth/middleware.js';
import { bearerSecret } from '../auth/secrets.js';
import { ControlPlaneError } from '../errors.js';
import { BatchedArtifact } from '../runners/artifact-batch.js';
import type { RunnerService } from '../runners/service.js';
import type { AppEnv } from './env.js';
import type { Lifecycle } from './lifecycle.js';
import { type createRouter, json } from './openapi.js';
import { errorToProblem, ProblemSchema, problem, problemResponses, sendProblem } from './problem.js';
import { looseBody as body, LeaseSchema } from './runner-schemas.js';
import { RunSchema } from './schemas.js';

export const RUNNER_SECURITY = [{ runnerCredential: [] }];

const RunIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' } }),
});

const leasesRoute = createRoute({
  method: 'post',
  path: '/runner/v1/leases',
  tags: ['runner'],
  summary: 'Long-poll for work: `{free, waitMs ≤ 25000}` → leases (at once when work is offered).',
  security: RUNNER_SECURITY,
  request: { body: body('`{free, waitMs}`') },
  responses: {
    200: json(z.object({ leases: z.array(LeaseSchema) }).openapi('Leases'), 'Leases granted.'),
    ...problemResponses(400, 401, 415),
  },
});
const heartbeatRoute = createRoute({
  method: 'post',
  path: '/runner/v1/heartbeat',
  tags: ['runner'],
  security: RUNNER_SECURITY,
  request: { body: body('`{leases: [{runId, epoch}]}`') },
  responses: {
    200: json(
      z.object({ lost: z.array(z.string()), draining: z.boolean() }).openapi('HeartbeatAnswer'),
      'Leases no longer held; whether to drain.',
    ),
    ...problemResponses(400, 401, 415),
  },
});
const eventsRoute = createRoute({
  method: 'post',
  path: '/runner/v1/runs/{id}/events',
  tags: ['runner'],
  security: RUNNER_SECURITY,
  request: { params: RunIdParam, body: body('`{epoch, events: TraceEvent[]}`') },
  responses: {
    202: json(z.object({ eventCount: z.number().int() }).openapi('EventsAccepted'), 'Stored.'),
    ...problemResponses(400, 401, 409, 415),
  },
});
const artifactRoute = createRoute({
  method: 'put',
  path: '/runner/v1/runs/{id}/artifacts',
  tags: ['runner'],
  summary: 'One artifact, raw bytes (streamed, at most `EVERDICT_ARTIFACT_MAX_BYTES`); `?epoch=&path=`.',
  security: RUNNER_SECURITY,
  request: {
    params: RunIdParam,
    query: z.object({ epoch: z.string().regex(/^\d{1,10}$/), path: z.string().min(1).max(1024) }),
  },
  responses: {
    201: json(
      z.object({ path: z.string(), address: z.string(), size: z.number().int() }).openapi('ArtifactStored'),
      'Stored by content address.',
    ),
    ...problemResponses(400, 401, 409, 413),
  },
});
const artifactBatchRoute = createRoute({
  method: 'post',
  path: '/runner/v1/runs/{id}/artifacts:batch',
  tags: ['runner'],
  summary:
    'Small artifacts in one call: `{epoch, files: [{path, content (base64)}]}` (≤ 256 files, within the body limit); one answer per file, in order.',
  security: RUNNER_SECURITY,
  request: { params: RunIdParam, body: body('`{epoch, files: [{path, content}]}`') },
  responses: {
    200: json(
      z.object({ results: z.array(BatchedArtifact) }).openapi('ArtifactsStored'),
      'Each file stored by content address (201), or past the artifact bound and not stored (413).',
    ),
    ...problemResponses(400, 401, 409, 413, 415),
  },
});
const completeRoute = createRoute({
  method: 'post',
  path: '/runner/v1/runs/{id}/complete',
  tags: ['runner'],
  summary: 'Settle the leased run: `{epoch, outputs, usage?, attestation, account?}` (signed attestation).',
  security: RUNNER_SECURITY,
  request: { params: RunIdParam, body: body('`{epoch, outputs, usage?, attestation, account?}`') },
  responses: {
    200: json(z.object({ run: RunSchema }).openapi('Completed'), 'The settled run.'),
    ...problemResponses(400, 401, 409, 415),
  },
});
const completionsRoute = createRoute({
  method: 'post',
  path: '/runner/v1/completions',
  tags: ['runner'],
  summary:
    'Settle several leased runs in the audit chain’s order: `{items: [{runId, epoch, outputs, usage?, attestation, account?}], next?: {free}}` (≤ 64). Each item is settled as `…/complete` settles one; the first refusal ends the batch and the rest are `skipped`. With `next`, up to `free` new leases are granted after the batch (as `POST /runner/v1/leases` grants them, without waiting) and answered in `leases`.',
  security: RUNNER_SECURITY,
  request: {
    body: body('`{items: [{runId, epoch, outputs, usage?, attestation, account?}], next?: {free}}`'),
  },
  responses: {
    200: json(
      z
        .object({
          results: z.array(
            z.object({
              runId: z.string(),
              status: z.number().int().openapi({ description: '200 settled, 409 skipped, else the refusal' }),
              outcome: z.enum(['settled', 'refused', 'skipped']),
              run: RunSchema.optional(),
              problem: ProblemSchema.optional(),
            }),
          ),
          leases: z
            .array(LeaseSchema)
            .optional()
            .openapi({ description: 'The next leases, when the request asked for them (`next`).' }),
        })
        .openapi('Completions'),
      'One result per item, in order.',
    ),
    ...problemResponses(400, 401, 415),
  },
});

/** `/runner/v1/*`: the runner's credential (401 `invalid_runner_credential` otherwise). */
export function requireRunner(runners: () => RunnerService): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const secret = bearerSecret(c.req.header('authorization'));
    if (!secret)
      return sendProblem(
        c,
        problem(
          'invalid_runner_credential',
          'a runner credential is required: Authorization: Bearer <credential>',
        ),
        CHALLENGE,
      );
    c.set('runner', await runners().authenticate(secret));
    await next();
  };
}

/** The `/runner/v1/*` routes on `app`, served by `svc` (long-polls under the server's `lifecycle`). */
export function registerRunnerProtocol(
  app: ReturnType<typeof createRouter>,
  svc: () => RunnerService,
  lifecycle: Lifecycle,
): void {
  app.openapi(leasesRoute, async (c) =>
    c.json(
      await lifecycle.poll(c.req.raw.signal, (signal) =>
        svc().leases(runnerOf(c.get('runner')), c.req.valid('json'), signal),
      ),
      200,
    ),
  );
  app.openapi(heartbeatRoute, async (c) =>
    c.json(await svc().heartbeat(runnerOf(c.get('runner')), c.req.valid('json')), 200),
  );
  app.openapi(eventsRoute, async (c) =>
    c.json(await svc().events(runnerOf(c.get('runner')), c.req.valid('param').id, c.req.valid('json')), 202),
  );
  app.openapi(artifactRoute, async (c) =>
    c.json(
      await svc().artifact(
        runnerOf(c.get('runner')),
        c.req.valid('param').id,
        c.req.valid('query'),
        c.req.raw.body,
      ),
      201,
    ),
  );
  app.openapi(artifactBatchRoute, async (c) =>
    c.json(
      await svc().artifactBatch(runnerOf(c.get('runner')), c.req.valid('param').id, c.req.valid('json')),
      200,
    ),
  );
  app.openapi(completeRoute, async (c) =>
    c.json(
      await svc().complete(runnerOf(c.get('runner')), c.req.valid('param').id, c.req.valid('json')),
      200,
    ),
  );
  app.openapi(completionsRoute, async (c) => {
    const { outcomes, leases } = await svc().completeMany(runnerOf(c.get('runner')), c.req.valid('json'));
    const results = outcomes.map((o) => {
      if ('run' in o) return { runId: o.runId, status: 200, outcome: 'settled' as const, run: o.run };
      if ('skipped' in o) return { runId: o.runId, status: 409, outcome: 'skipped' as const };
      const mapped = errorToProblem(o.error);
      if (mapped.unexpected) c.get('log').error({ err: o.error }, 'a completion failed');
      return {
        runId: o.runId,
        status: mapped.problem.status,
        outcome: 'refused' as const,
        problem: mapped.problem,
      };
    });
    return c.json({ results, ...(leases ? { leases } : {}) }, 200);
  });
}

function runnerOf<T>(r: T | undefined): T {
  if (r === undefined)
    throw new ControlPlaneError('invalid_runner_credential', 'a runner credential is required');
  return r;
}
