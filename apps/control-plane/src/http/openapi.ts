// One router factory for every route group: validation failures become problem+json 400s with the
// zod issues, and the OpenAPI document is generated from the same zod schemas the routes validate with.
import { JsonValue } from '@everdict/run-model';
import { OpenAPIHono } from '@hono/zod-openapi';
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

export const API_KEY_SECURITY = [{ apiKey: [] }];
export const INTERNAL_SECURITY = [{ internalToken: [] }];

/** The whole document; built once per app (the schemas do not change at run time). */
export function openApiDocument(app: OpenAPIHono<AppEnv>, version: string): unknown {
  // run-model's JSON values are recursive: a named component turns the recursion into a $ref.
  app.openAPIRegistry.register('JsonValue', JsonValue);
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
