// Runners (docs/runner-protocol.md): pairing tokens (tenant admin → tenant-scoped runner; service token →
// shared runner), pairing (the token is the credential), the runners list, drain, revoke (a tenant admin: its
// tenant's runners; the operator, `/internal/runners/*`: the shared ones) and the harness registry. The
// runner's own calls under `/runner/v1/*` are runner-protocol.ts, registered on the same router.
// Bodies are declared loosely here and parsed strictly by the runner service (zod: 400 validation_failed).
import { createRoute, z } from '@hono/zod-openapi';
import { requireRole } from '../auth/middleware.js';
import { ControlPlaneError } from '../errors.js';
import type { RunnerService } from '../runners/service.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, INTERNAL_SECURITY, json } from './openapi.js';
import { problemResponses } from './problem.js';
import { registerRunnerProtocol } from './runner-protocol.js';
import {
  looseBody as body,
  HarnessSchema,
  optionalLooseBody as optionalBody,
  PairedSchema,
  PairingTokenSchema,
  RunnerSchema,
} from './runner-schemas.js';
import { IdParam } from './schemas.js';

const admin = requireRole('admin');

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
  registerRunnerProtocol(app, svc, lifecycle);
  return app;
}

/** An optional JSON body: none (or empty) → `{}`; otherwise parsed by the service. */
function optionalJson(text: string): unknown {
  return text.trim() === '' ? {} : (JSON.parse(text) as unknown);
}
