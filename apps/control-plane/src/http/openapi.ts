// One router factory for every route group: validation failures (query, path parameters, headers, body)
// become problem+json 400s by one mapping (problem.ts `validationProblem`: the zod issues, each with its
// field and where it is, and a `detail` naming the first), every route that validates input documents that
// 400, and the OpenAPI document is generated from the same zod schemas the routes validate with.
// A body the route declares `required` is required: a request without one is refused (400 malformed_json)
// after the route's own middleware (authorization first) and before its validators — @hono/zod-openapi
// alone would validate `{}` in its place, and a schema of defaults would then pass (`POST /api-keys` with no
// body minted a key).
import { JsonValue } from '@everdict/run-model';
import { OpenAPIHono, type RouteConfig, z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './env.js';
import { problem, problemResponses, sendProblem, validationProblem } from './problem.js';

export function createRouter(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (!result.success) return sendProblem(c, validationProblem(result.error, result.target));
      return undefined;
    },
  });
  const register = app.openapi;
  app.openapi = ((route: RouteConfig, ...rest: unknown[]) =>
    (register as (r: RouteConfig, ...a: unknown[]) => unknown)(
      withValidationRefusal(withRequiredBody(route)),
      ...rest,
    )) as typeof app.openapi;
  return app;
}

/** A route that validates any part of its request can answer that 400: documented on every such route. */
function withValidationRefusal(route: RouteConfig): RouteConfig {
  const r = route.request;
  const validates =
    r !== undefined &&
    (r.params !== undefined ||
      r.query !== undefined ||
      r.headers !== undefined ||
      r.cookies !== undefined ||
      r.body !== undefined);
  if (!validates || route.responses[400] !== undefined) return route;
  return { ...route, responses: { ...route.responses, ...problemResponses(400) } };
}

/** A route whose body is `required` gets `requireBody` after its own middleware (so after its role check). */
function withRequiredBody(route: RouteConfig): RouteConfig {
  if (route.request?.body?.required !== true) return route;
  const own = route.middleware === undefined ? [] : [route.middleware].flat();
  return { ...route, middleware: [...own, requireBody] as RouteConfig['middleware'] };
}

/**
 * No body at all (no Content-Type, nothing sent) where one is required: 400 `malformed_json`, as an empty
 * `application/json` body already is. A body without a Content-Type is left to the media-type gate (415).
 */
export const requireBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header('content-type') === undefined) {
    // Read (and cached by hono) only when nothing says what the body is.
    const none = c.req.raw.body === null || (await c.req.arrayBuffer()).byteLength === 0;
    if (none)
      return sendProblem(
        c,
        problem('malformed_json', 'a JSON body is required (Content-Type: application/json)'),
      );
  }
  await next();
};

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
