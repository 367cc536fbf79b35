// Agent hosts (issue 16): pairing with a runner pairing token and the host's Ed25519 key and its signature (no
// API key), the tenant's list and revocation of its hosts, and the operator's door to the shared ones
// (`/internal/agents/hosts*`, the service token), as runners have theirs. Mounted before agents.ts:
// `GET /agents/hosts` is no agent id.
import { createRoute, z } from '@hono/zod-openapi';
import { AgentHostPairInput } from '../agents/hosts.js';
import { requireRole } from '../auth/middleware.js';
import { agentServiceOf } from './agents.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, INTERNAL_SECURITY, json, jsonBody } from './openapi.js';
import { problemResponses } from './problem.js';
import { IdParam } from './schemas.js';

const AgentHostSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    shared: z.boolean(),
    tenantId: z.string().nullable(),
    state: z.enum(['active', 'revoked']),
    publicKey: z.string(),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
    revokedBy: z
      .string()
      .nullable()
      .openapi({ description: 'Who revoked it: the API key id, or `operator` (the service token).' }),
    leasesHeld: z.number().int(),
  })
  .openapi('AgentHost');

const RevokedAgentHostSchema = AgentHostSchema.extend({
  turns: z
    .array(
      z.object({
        runId: z.string(),
        outcome: z.enum(['requeued', 'parked', 'failed', 'settled', 'pending']),
        status: z.string(),
      }),
    )
    .openapi({ description: 'Every turn the host held, with what became of it (agents/revoke.ts).' }),
  requeued: z.array(z.string()),
  parked: z.array(z.string()),
  failed: z.array(z.string()),
  noCompatibleHost: z.array(z.string()).openapi({
    description:
      'Declined parked turns (of the tenant; a shared host: of every tenant) no active host can resume now: failed `no_compatible_host`.',
  }),
}).openapi('RevokedAgentHost');

const routes = {
  pairHost: createRoute({
    method: 'post',
    path: '/agents/hosts/pair',
    tags: ['agents'],
    summary:
      'Pair an agent host: redeem a runner pairing token with the host’s Ed25519 public key, `{token, publicKey, signature, name}` → its host id (its lease holder name); the key signs every interval it ends and is listed by GET /keys. `signature` (128 hex) is the key’s Ed25519 signature of `everdict-agent-host-pair/1\\n<sha256(token) hex>\\n<publicKey>` (UTF-8; a runner’s `everdict-runner-pair/1` proof does not verify here): a signature that does not verify is 401 `invalid_pairing_token`, `details.reason: bad_signature`, the token unspent. A key registered to any runner or agent host already (revoked ones included): 409 `conflict`, `details.reason: public_key_in_use`, the token unspent.',
    request: { body: jsonBody(AgentHostPairInput) },
    responses: {
      201: json(
        z.object({ hostId: z.string(), publicKey: z.string() }).openapi('PairedAgentHost'),
        'The host id.',
      ),
      ...problemResponses(400, 401, 409, 415),
    },
  }),
  listHosts: createRoute({
    method: 'get',
    path: '/agents/hosts',
    tags: ['agents'],
    summary: "The tenant's agent hosts and the shared ones (`shared`), with the leases each holds.",
    security: API_KEY_SECURITY,
    responses: {
      200: json(z.object({ items: z.array(AgentHostSchema) }).openapi('AgentHostList'), 'Agent hosts.'),
      ...problemResponses(401),
    },
  }),
  revokeHost: createRoute({
    method: 'post',
    path: '/agents/hosts/{id}/revoke',
    tags: ['agents'],
    summary:
      "Revoke one of the tenant's agent hosts (admin): its next lease, heartbeat, call or report is 401 `invalid_agent_host`; each turn its leases held is moved by the lease rule — a running one back to the queue (`requeued`), a parked one's lost resume counted (`parked`), a last attempt failed (`failed`) — and declined parked turns no host can resume any more fail `no_compatible_host`. Idempotent.",
    security: API_KEY_SECURITY,
    middleware: [requireRole('admin')] as const,
    request: { params: IdParam },
    responses: {
      200: json(RevokedAgentHostSchema, 'The agent host, revoked, and the fate of every turn it held.'),
      ...problemResponses(400, 401, 403, 404),
    },
  }),
  listSharedHosts: createRoute({
    method: 'get',
    path: '/internal/agents/hosts',
    tags: ['internal'],
    summary: 'The shared agent hosts (the operator’s door; a tenant’s hosts are its admins’).',
    security: INTERNAL_SECURITY,
    responses: {
      200: json(
        z.object({ items: z.array(AgentHostSchema) }).openapi('SharedAgentHostList'),
        'Shared hosts.',
      ),
      ...problemResponses(401),
    },
  }),
  revokeSharedHost: createRoute({
    method: 'post',
    path: '/internal/agents/hosts/{id}/revoke',
    tags: ['internal'],
    summary:
      'Revoke a shared agent host, as `POST /agents/hosts/{id}/revoke` does a tenant’s (its turns of every tenant moved by the lease rule; a tenant’s host: 404).',
    security: INTERNAL_SECURITY,
    request: { params: IdParam },
    responses: {
      200: json(RevokedAgentHostSchema, 'The agent host, revoked, and the fate of every turn it held.'),
      ...problemResponses(400, 401, 404),
    },
  }),
};

export function agentHostRoutes({ services }: RouteDeps) {
  const app = createRouter();
  const svc = agentServiceOf(services);
  app.openapi(routes.pairHost, async (c) => c.json(await svc().pairHost(c.req.valid('json')), 201));
  app.openapi(routes.listHosts, async (c) =>
    c.json({ items: await svc().listHosts(c.get('principal')) }, 200),
  );
  app.openapi(routes.revokeHost, async (c) =>
    c.json(await svc().revokeHost(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(routes.listSharedHosts, async (c) => c.json({ items: await svc().listSharedHosts() }, 200));
  app.openapi(routes.revokeSharedHost, async (c) =>
    c.json(await svc().revokeSharedHost(c.req.valid('param').id), 200),
  );
  return app;
}
