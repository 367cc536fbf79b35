// Tenants and API keys (admin only): create a tenant with its first admin key, mint and revoke keys.
// A raw key appears in exactly one response — the one that created it; only its hash is stored.

import { TenantPolicy } from '@everdict/admission';
import { createRoute, z } from '@hono/zod-openapi';
import { requireOperator, requireRole } from '../auth/middleware.js';
import { CreateKeyInput, TenantPolicyPatch } from '../services/types.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, json } from './openapi.js';
import { problemResponses } from './problem.js';
import { ApiKeySchema, CreatedKeySchema, IdParam } from './schemas.js';

const admin = requireRole('admin');
const operator = requireOperator();

// Strict, as every body of these routes: a misspelt field is a 400, never a silent default (a key minted
// `member` for `{"rol": "admin"}`).
export const CreateTenantInput = z
  .strictObject({
    id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lower-case letters, digits, _ and -, at most 63')
      .openapi({ example: 'acme' }),
    name: z.string().min(1).max(200).optional(),
  })
  .openapi('CreateTenant');

const CreatedTenantSchema = z
  .object({ tenantId: z.string(), key: CreatedKeySchema })
  .openapi('CreatedTenant');
const KeyListSchema = z.object({ items: z.array(ApiKeySchema) }).openapi('ApiKeyList');

const createTenant = createRoute({
  method: 'post',
  path: '/tenants',
  tags: ['admin'],
  summary:
    'Create a tenant and its first admin key (shown once). Operator only: an admin of tenant `default`.',
  security: API_KEY_SECURITY,
  middleware: [operator] as const,
  request: { body: { required: true, content: { 'application/json': { schema: CreateTenantInput } } } },
  responses: {
    201: json(CreatedTenantSchema, 'The tenant and its admin key.'),
    ...problemResponses(400, 401, 403, 409, 415),
  },
});

const createKey = createRoute({
  method: 'post',
  path: '/api-keys',
  tags: ['admin'],
  summary: "Mint a key in the caller's tenant (shown once).",
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  request: {
    body: { required: true, content: { 'application/json': { schema: CreateKeyInput } } },
  },
  responses: {
    201: json(CreatedKeySchema, 'The key, with its raw secret.'),
    ...problemResponses(400, 401, 403, 415),
  },
});

const listKeys = createRoute({
  method: 'get',
  path: '/api-keys',
  tags: ['admin'],
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  responses: {
    200: json(KeyListSchema, "The tenant's keys (never their secrets)."),
    ...problemResponses(401, 403),
  },
});

const revokeKey = createRoute({
  method: 'post',
  path: '/api-keys/{id}/revoke',
  tags: ['admin'],
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  request: { params: IdParam },
  responses: { 200: json(ApiKeySchema, 'The revoked key.'), ...problemResponses(400, 401, 403, 404) },
});

// Admission's and the service's own schemas: one definition, validated here and described in /openapi.json.
const TenantPolicySchema = TenantPolicy;
const TenantPolicyPatchSchema = TenantPolicyPatch;

const getPolicy = createRoute({
  method: 'get',
  path: '/tenant/policy',
  tags: ['admin'],
  summary: "The caller's tenant policy (admission's, with the cascade opt-out).",
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  responses: { 200: json(TenantPolicySchema, 'The policy in force.'), ...problemResponses(401, 403, 404) },
});

const patchPolicy = createRoute({
  method: 'patch',
  path: '/tenant/policy',
  tags: ['admin'],
  summary:
    'Set the tenant-settable part of the policy: `cascade: {skipKinds, skipCauses}` — descendants of those kinds or causes (and what they caused) survive a cancel; `maxSessionTtlSec`, `sessionUsdPerHour` for sessions (any subset).',
  security: API_KEY_SECURITY,
  middleware: [admin] as const,
  request: { body: { required: true, content: { 'application/json': { schema: TenantPolicyPatchSchema } } } },
  responses: {
    200: json(TenantPolicySchema, 'The policy now in force.'),
    ...problemResponses(400, 401, 403, 404, 415),
  },
});

export function tenantRoutes({ services }: RouteDeps) {
  const app = createRouter();
  // A raw key is in these two responses: no cache (a proxy's, a browser's) may keep a copy.
  app.openapi(createTenant, async (c) => {
    const created = await services.auth.createTenant(c.get('principal'), c.req.valid('json'));
    return c.json(created, 201, { 'cache-control': 'no-store' });
  });
  app.openapi(createKey, async (c) => {
    const created = await services.auth.createKey(c.get('principal'), c.req.valid('json'));
    return c.json(created, 201, { 'cache-control': 'no-store' });
  });
  app.openapi(listKeys, async (c) =>
    c.json({ items: await services.auth.listKeys(c.get('principal')) }, 200),
  );
  app.openapi(getPolicy, async (c) => c.json(await services.auth.policy(c.get('principal')), 200));
  app.openapi(patchPolicy, async (c) =>
    c.json(await services.auth.setPolicy(c.get('principal'), c.req.valid('json')), 200),
  );
  app.openapi(revokeKey, async (c) =>
    c.json(await services.auth.revokeKey(c.get('principal'), c.req.valid('param').id), 200),
  );
  return app;
}
