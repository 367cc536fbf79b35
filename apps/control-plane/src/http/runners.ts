// Runners (docs/runner-protocol.md): pairing tokens (tenant admin → tenant-scoped runner; service token →
// shared runner), pairing (the token is the credential), the runners list, drain, revoke (a tenant admin: its
// tenant's runners; the operator, `/internal/runners/*`: the shared ones); the harness
// registry; and the runner's own calls under `/runner/v1/*` with `Authorization: Bearer <credential>`:
// leases (long-poll), heartbeats, events, artifacts (streamed), completion with a signed attestation.
// Bodies are declared loosely here and parsed strictly by the runner service (zod: 400 validation_failed).
import { createRoute, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { CHALLENGE, requireRole } from '../auth/middleware.js';
import { bearerSecret } from '../auth/secrets.js';
import { ControlPlaneError } from '../errors.js';
import { BatchedArtifact } from '../runners/artifact-batch.js';
import type { RunnerService } from '../runners/service.js';
import type { RouteDeps } from './deps.js';
import type { AppEnv } from './env.js';
import { API_KEY_SECURITY, createRouter, INTERNAL_SECURITY, json } from './openapi.js';
import { errorToProblem, ProblemSchema, problem, problemResponses, sendProblem } from './problem.js';
import {
  HarnessSchema,
  LeaseSchema,
  PairedSchema,
  PairingTokenSchema,
  RunnerSchema,
} from './runner-schemas.js';
import { IdParam, RunSchema } from './schemas.js';

export const RUNNER_SECURITY = [{ runnerCredential: [] }];

const body = (description: string) => ({
  required: true,
  content: {
    'application/json': { schema: z.record(z.string(), z.unknown()).openapi({ description }) },
  },
});
const optionalBody = (description: string) => ({ ...body(description), required: false });
const admin = requireRole('admin');

const RunIdParam = z.object({
  id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'id', in: 'path' } }),
});

const mintToken = createRoute({
  method: 'post',
  path: '/runners/pairing-tokens',
  tags: ['runners'],
  summary: "A pairing token for a runner scoped to the caller's tenant (shown once; single use; 15 min).",
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  request: { body: optionalBody('`{name?}`') },
  responses: { 201: json(PairingTokenSchema, 'The token.'), ...problemResponses(400, 401, 403, 415) },
});
const mintSharedToken = createRoute({
  method: 'post',
  path: '/internal/runners/pairing-tokens',
  tags: ['internal'],
  summary: 'A pairing token for a shared runner (any tenant’s runs): the operator’s door.',
  security: INTERNAL_SECURITY,
  request: { body: optionalBody('`{name?}`') },
  responses: { 201: json(PairingTokenSchema, 'The token.'), ...problemResponses(400, 401, 415) },
});
const pairRoute = createRoute({
  method: 'post',
  path: '/runners/pair',
  tags: ['runners'],
  summary:
    'Redeem a pairing token: `{token, publicKey, signature, name, capabilities}` → the runner id and credential. `signature` (128 hex) is the key’s Ed25519 signature of `everdict-runner-pair/1\\n<sha256(token) hex>\\n<publicKey>` (UTF-8): a signature that does not verify is 401 `invalid_pairing_token`, `details.reason: bad_signature`, the token unspent. A public key registered to any runner or agent host already, revoked ones included: 409 `conflict`, `details.reason: public_key_in_use`, the token unspent.',
  request: { body: body('`{token, publicKey, signature, name, capabilities}`') },
  responses: { 201: json(PairedSchema, 'Shown once.'), ...problemResponses(400, 401, 409, 415) },
});
const listRoute = createRoute({
  method: 'get',
  path: '/runners',
  tags: ['runners'],
  summary: "The tenant's runners and the shared ones.",
  security: API_KEY_SECURITY,
  responses: {
    200: json(z.object({ items: z.array(RunnerSchema) }).openapi('RunnerList'), 'Runners.'),
    ...problemResponses(401),
  },
});
const drainRoute = createRoute({
  method: 'post',
  path: '/runners/{id}/drain',
  tags: ['runners'],
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  request: { params: IdParam },
  responses: {
    200: json(RunnerSchema, 'The runner, draining.'),
    ...problemResponses(400, 401, 403, 404, 409),
  },
});
const revokeRoute = createRoute({
  method: 'post',
  path: '/runners/{id}/revoke',
  tags: ['runners'],
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  request: { params: IdParam },
  responses: {
    200: json(RunnerSchema, 'The runner, revoked; `requeued` lists the runs its leases held.'),
    ...problemResponses(400, 401, 403, 404),
  },
});
const listSharedRoute = createRoute({
  method: 'get',
  path: '/internal/runners',
  tags: ['internal'],
  summary: 'The shared runners (the operator’s door; a tenant’s runners are its admins’).',
  security: INTERNAL_SECURITY,
  responses: {
    200: json(z.object({ items: z.array(RunnerSchema) }).openapi('SharedRunnerList'), 'Shared runners.'),
    ...problemResponses(401),
  },
});
const drainSharedRoute = createRoute({
  method: 'post',
  path: '/internal/runners/{id}/drain',
  tags: ['internal'],
  summary: 'Drain a shared runner, as `POST /runners/{id}/drain` does (a tenant’s runner: 404).',
  security: INTERNAL_SECURITY,
  request: { params: IdParam },
  responses: {
    200: json(RunnerSchema, 'The runner, draining.'),
    ...problemResponses(400, 401, 404, 409),
  },
});
const revokeSharedRoute = createRoute({
  method: 'post',
  path: '/internal/runners/{id}/revoke',
  tags: ['internal'],
  summary: 'Revoke a shared runner, as `POST /runners/{id}/revoke` does (a tenant’s runner: 404).',
  security: INTERNAL_SECURITY,
  request: { params: IdParam },
  responses: {
    200: json(RunnerSchema, 'The runner, revoked; `requeued` lists the runs its leases held.'),
    ...problemResponses(400, 401, 404),
  },
});
const defineHarnessRoute = createRoute({
  method: 'post',
  path: '/harnesses',
  tags: ['harnesses'],
  summary:
    'Define a harness version `{id, version, image, command}` (immutable: 409 if defined differently).',
  security: API_KEY_SECURITY,
  request: { body: body('`{id, version, image, command}`') },
  responses: {
    200: json(HarnessSchema, 'Already defined, identically.'),
    201: json(HarnessSchema, 'Defined.'),
    ...problemResponses(400, 401, 409, 415),
  },
});
const listHarnessesRoute = createRoute({
  method: 'get',
  path: '/harnesses',
  tags: ['harnesses'],
  security: API_KEY_SECURITY,
  responses: {
    200: json(z.object({ items: z.array(HarnessSchema) }).openapi('HarnessList'), 'Harnesses.'),
    ...problemResponses(401),
  },
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

export function runnerRoutes({ services, lifecycle }: RouteDeps) {
  const app = createRouter();
  const svc = (): RunnerService => {
    if (!services.runners)
      throw new ControlPlaneError('route_not_found', 'this control plane has no runners');
    return services.runners;
  };
  const noStore = { 'cache-control': 'no-store' };
  app.openapi(mintToken, async (c) =>
    c.json(await svc().mintPairingToken(c.get('principal'), optionalJson(await c.req.text())), 201, noStore),
  );
  app.openapi(mintSharedToken, async (c) =>
    c.json(await svc().mintSharedPairingToken(optionalJson(await c.req.text())), 201, noStore),
  );
  app.openapi(pairRoute, async (c) => c.json(await svc().pair(c.req.valid('json')), 201, noStore));
  app.openapi(listRoute, async (c) => c.json({ items: await svc().list(c.get('principal')) }, 200));
  app.openapi(drainRoute, async (c) =>
    c.json(await svc().drain(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(revokeRoute, async (c) =>
    c.json(await svc().revoke(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(listSharedRoute, async (c) => c.json({ items: await svc().listShared() }, 200));
  app.openapi(drainSharedRoute, async (c) => c.json(await svc().drainShared(c.req.valid('param').id), 200));
  app.openapi(revokeSharedRoute, async (c) => c.json(await svc().revokeShared(c.req.valid('param').id), 200));
  app.openapi(defineHarnessRoute, async (c) => {
    const { harness, created } = await svc().defineHarness(c.get('principal'), c.req.valid('json'));
    return created ? c.json(harness, 201) : c.json(harness, 200);
  });
  app.openapi(listHarnessesRoute, async (c) =>
    c.json({ items: await svc().listHarnesses(c.get('principal')) }, 200),
  );
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
  return app;
}

function runnerOf<T>(r: T | undefined): T {
  if (r === undefined)
    throw new ControlPlaneError('invalid_runner_credential', 'a runner credential is required');
  return r;
}

/** An optional JSON body: none (or empty) → `{}`; otherwise parsed by the service. */
function optionalJson(text: string): unknown {
  return text.trim() === '' ? {} : (JSON.parse(text) as unknown);
}
