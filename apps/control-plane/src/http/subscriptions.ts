// /subscriptions — bind an event selector (or a cron schedule: `schedule.fired`) to a run spec. Events
// from the outbox then create runs stamped with their cause; loop guards are enforced from data.
import { createRoute, z } from '@hono/zod-openapi';
import { CreateSubscriptionInput, FiringsQuery } from '../services/types.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, json } from './openapi.js';
import { problemResponses } from './problem.js';
import { FiringPageSchema, IdParam, SubscriptionSchema } from './schemas.js';

const SubscriptionListSchema = z.object({ items: z.array(SubscriptionSchema) }).openapi('SubscriptionList');
const EnabledBody = z.object({ enabled: z.boolean() }).openapi('SetSubscriptionEnabled');

const create = createRoute({
  method: 'post',
  path: '/subscriptions',
  tags: ['subscriptions'],
  summary: 'Subscribe a run spec to events (selector) or to time (schedule, cron syntax).',
  security: API_KEY_SECURITY,
  request: {
    body: {
      required: true,
      content: { 'application/json': { schema: CreateSubscriptionInput } },
    },
  },
  responses: {
    201: json(SubscriptionSchema, 'The subscription.'),
    ...problemResponses(400, 401, 409, 413, 415),
  },
});

const list = createRoute({
  method: 'get',
  path: '/subscriptions',
  tags: ['subscriptions'],
  security: API_KEY_SECURITY,
  responses: { 200: json(SubscriptionListSchema, "The tenant's subscriptions."), ...problemResponses(401) },
});

const get = createRoute({
  method: 'get',
  path: '/subscriptions/{id}',
  tags: ['subscriptions'],
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: { 200: json(SubscriptionSchema, 'The subscription.'), ...problemResponses(400, 401, 404) },
});

const setEnabled = createRoute({
  method: 'patch',
  path: '/subscriptions/{id}',
  tags: ['subscriptions'],
  summary: 'Enable or disable (disabling stops future activations; finished work is untouched).',
  security: API_KEY_SECURITY,
  request: {
    params: IdParam,
    body: { required: true, content: { 'application/json': { schema: EnabledBody } } },
  },
  responses: { 200: json(SubscriptionSchema, 'The subscription.'), ...problemResponses(400, 401, 404, 415) },
});

const firings = createRoute({
  method: 'get',
  path: '/subscriptions/{id}/firings',
  tags: ['subscriptions'],
  summary:
    'The events it matched, newest first: the run each created, or why it created none (a loop guard, its cooldown, the gate).',
  security: API_KEY_SECURITY,
  request: { params: IdParam, query: FiringsQuery },
  responses: {
    200: json(FiringPageSchema, 'One page; pass nextBefore as before for older firings.'),
    ...problemResponses(400, 401, 404),
  },
});

const remove = createRoute({
  method: 'delete',
  path: '/subscriptions/{id}',
  tags: ['subscriptions'],
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: { 204: { description: 'Deleted.' }, ...problemResponses(400, 401, 404) },
});

export function subscriptionRoutes({ services }: RouteDeps) {
  const app = createRouter();
  app.openapi(create, async (c) =>
    c.json(await services.subscriptions.create(c.get('principal'), c.req.valid('json')), 201),
  );
  app.openapi(list, async (c) =>
    c.json({ items: await services.subscriptions.list(c.get('principal')) }, 200),
  );
  app.openapi(get, async (c) =>
    c.json(await services.subscriptions.get(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(setEnabled, async (c) => {
    const view = await services.subscriptions.setEnabled(
      c.get('principal'),
      c.req.valid('param').id,
      c.req.valid('json').enabled,
    );
    return c.json(view, 200);
  });
  app.openapi(firings, async (c) =>
    c.json(
      await services.subscriptions.firings(c.get('principal'), c.req.valid('param').id, c.req.valid('query')),
      200,
    ),
  );
  app.openapi(remove, async (c) => {
    await services.subscriptions.delete(c.get('principal'), c.req.valid('param').id);
    return c.body(null, 204);
  });
  return app;
}
