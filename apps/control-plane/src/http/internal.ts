// /internal/* — service-to-service endpoints, authenticated by the service token (constant-time
// compare, in app.ts). The agent service reports agent run transitions here; the control plane owns
// the record. The tenant rides a header, since the token itself is not a tenant's.
import { createRoute, z } from '@hono/zod-openapi';
import { AgentRunEventInput, servicePrincipal } from '../services/types.js';
import type { RouteDeps } from './deps.js';
import { createRouter, INTERNAL_SECURITY } from './openapi.js';
import { problemResponses } from './problem.js';
import { RunSchema } from './schemas.js';

export const TenantHeader = z.object({
  'x-everdict-tenant': z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/)
    .openapi({ description: 'The tenant the reported run belongs to.', example: 'default' }),
});

const agentRunEvents = createRoute({
  method: 'post',
  path: '/internal/agent-run-events',
  tags: ['internal'],
  summary:
    'The agent service reports a turn/run transition: started, awaiting_input, suspended, resumed, succeeded, failed, cancelled.',
  security: INTERNAL_SECURITY,
  request: {
    headers: TenantHeader,
    body: {
      required: true,
      content: { 'application/json': { schema: AgentRunEventInput } },
    },
  },
  responses: {
    200: {
      description: 'The run after the transition.',
      content: { 'application/json': { schema: RunSchema } },
    },
    ...problemResponses(400, 401, 402, 404, 409, 413, 415, 429),
  },
});

export function internalRoutes({ services }: RouteDeps) {
  const app = createRouter();
  app.openapi(agentRunEvents, async (c) => {
    const principal = servicePrincipal(c.req.valid('header')['x-everdict-tenant']);
    const body = c.req.valid('json');
    // A leased turn (epoch + holder) is the agent service's (src/agents/reports.ts); else the bridge's.
    if (body.epoch !== undefined && services.agents)
      return c.json(await services.agents.report(principal, body), 200);
    return c.json(await services.agentBridge.report(principal, body), 200);
  });
  return app;
}
