// One router factory for every route group: validation failures become problem+json 400s with the
// zod issues, and the OpenAPI document is generated from the same zod schemas the routes validate with.
import { JsonValue } from '@everdict/run-model';
import { OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from './env.js';
import { sendProblem, validationProblem } from './problem.js';

export function createRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (!result.success) return sendProblem(c, validationProblem(result.error, result.target));
      return undefined;
    },
  });
}

/** A JSON response of `schema` (an OpenAPI route's `responses` entry). */
export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});

/** A required JSON request body of `schema` (an OpenAPI route's `request.body`). */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { 'application/json': { schema } },
});

export const API_KEY_SECURITY = [{ apiKey: [] }];
export const INTERNAL_SECURITY = [{ internalToken: [] }];

/**
 * `schema.openapi(refId)` for a schema built by another package. @hono/zod-openapi extends zod when it is
 * loaded, and zod copies that method onto each schema when the schema is built: a schema built before
 * (run-model's, which the bundle evaluates first) has no `.openapi` of its own — calling it was the 500 on
 * `GET /openapi.json` in the built server. The extension's method is applied to the schema instead, so
 * import order no longer matters (and the named instance is the one its recursion refers to).
 */
export function named<T extends z.ZodType>(schema: T, refId: string): T {
  return z.ZodType.prototype.openapi.call(schema, refId) as T;
}

/** The whole document; built once per app (the schemas do not change at run time). */
export function openApiDocument(app: OpenAPIHono<AppEnv>, version: string): unknown {
  // run-model's JSON values are recursive: a named component turns the recursion into a $ref.
  app.openAPIRegistry.register('JsonValue', named(JsonValue, 'JsonValue'));
  app.openAPIRegistry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'A tenant API key: `Authorization: Bearer <key>`.',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'internalToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The service token (EVERDICT_INTERNAL_TOKEN), for /internal/* only.',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'runnerCredential', {
    type: 'http',
    scheme: 'bearer',
    description: 'A paired runner’s credential, for /runner/v1/* only.',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'metricsToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'EVERDICT_METRICS_TOKEN: GET /metrics then includes per-tenant series.',
  });
  return app.getOpenAPIDocument({
    openapi: '3.0.3',
    info: {
      title: 'Everdict control plane',
      version,
      description:
        'The ledger of runs: admission, groups and scoring, subscriptions, run records. ' +
        'Every refusal is application/problem+json with a stable `code`.',
    },
  });
}
