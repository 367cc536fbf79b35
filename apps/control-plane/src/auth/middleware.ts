// Authentication at the HTTP edge. Public routes take an API key (`Authorization: Bearer <key>`),
// resolved by the key repository (hash at rest) to a tenant + role; internal routes take the service
// token, compared in constant time. Refusals are problem+json: 401 for missing or unknown credentials,
// 403 for a member on an admin route (or another tenant's admin on an operator route) — decided by the
// route's middleware, before its body or parameters are validated: a caller without the right learns
// nothing about the input's schema. Tenant scoping happens in every query, never here by filtering.
import type { MiddlewareHandler } from 'hono';
import type { AppEnv, Role } from '../http/env.js';
import { problem, sendProblem } from '../http/problem.js';
import type { AuthService } from '../services/api.js';
import { OPERATOR_TENANT } from '../services/auth.js';
import { bearerSecret, constantTimeEqual } from './secrets.js';

export const CHALLENGE = { 'www-authenticate': 'Bearer realm="everdict"' };

/** The key lookup throws `unauthorized` (401) for an unknown or revoked key; app.onError renders it. */
export type ApiKeyAuthenticator = Pick<AuthService, 'authenticate' | 'watch'>;

export function requireApiKey(keys: ApiKeyAuthenticator): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // `/runs` and `/runs/*` both match `/runs`: the key is verified once per request.
    if (c.get('principal') !== undefined) return next();
    const secret = bearerSecret(c.req.header('authorization'));
    if (!secret) {
      return sendProblem(
        c,
        problem('unauthenticated', 'an API key is required: Authorization: Bearer <key>'),
        CHALLENGE,
      );
    }
    c.set('principal', await keys.authenticate(secret));
    // What the request holds open past its answer (an SSE stream) ends when the key is revoked (revocation.ts).
    const watch = keys.watch?.bind(keys);
    if (watch) c.set('watchKey', (onRevoked) => watch(secret, onRevoked));
    await next();
  };
}

export function requireRole(role: Role): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (role === 'admin' && c.get('principal').role !== 'admin') {
      return sendProblem(c, problem('forbidden', 'this operation needs an admin key'));
    }
    await next();
  };
}

/** Operator routes (`POST /tenants`): an admin key of the operator tenant only. */
export function requireOperator(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const p = c.get('principal');
    if (p.role !== 'admin' || p.tenantId !== OPERATOR_TENANT) {
      return sendProblem(
        c,
        problem('forbidden', `only an admin of tenant ${OPERATOR_TENANT} may do this (the operator)`),
      );
    }
    await next();
  };
}

/**
 * Internal endpoints: `Authorization: Bearer <EVERDICT_INTERNAL_TOKEN>` (or `x-everdict-internal-token`).
 * With no token configured every internal call is refused — an unset secret never means "open".
 */
export function requireInternalToken(expected: string | undefined): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (expected === undefined) {
      return sendProblem(
        c,
        problem('internal_disabled', 'internal endpoints are disabled: EVERDICT_INTERNAL_TOKEN is not set'),
      );
    }
    const presented =
      bearerSecret(c.req.header('authorization')) ?? c.req.header('x-everdict-internal-token');
    if (presented === undefined || !constantTimeEqual(presented, expected)) {
      return sendProblem(c, problem('invalid_service_token', 'a valid service token is required'), CHALLENGE);
    }
    await next();
  };
}
