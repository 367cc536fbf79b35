// /groups — experiments and batches (N runs of one spec, or one per case), their rollup, scoring
// (graders over the group's runs; re-scoring links by rescoreOf) and promotion to a scorecard.
import { createRoute, z } from '@hono/zod-openapi';
import { CreateGroupInput, ListGroupsQuery, PromoteGroupInput, ScoreGroupInput } from '../services/types.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, json, jsonBody } from './openapi.js';
import { problemResponses } from './problem.js';
import {
  CreatedGroupSchema,
  GroupPageSchema,
  GroupSchema,
  IdParam,
  RunCancelBody,
  ScoredSchema,
} from './schemas.js';

const CancelledGroupSchema = z
  .object({
    group: GroupSchema,
    cancelled: z.array(z.string()).openapi({ description: 'Every run id cancelled (descendants included).' }),
  })
  .openapi('CancelledGroup');

const cancelGroup = createRoute({
  method: 'post',
  path: '/groups/{id}/cancel',
  tags: ['groups'],
  summary:
    'Cancel every run of the group that has not settled, each with its non-terminal causal descendants.',
  security: API_KEY_SECURITY,
  request: {
    params: IdParam,
    body: { required: false, content: { 'application/json': { schema: RunCancelBody } } },
  },
  responses: { 200: json(CancelledGroupSchema, 'Cancelled.'), ...problemResponses(400, 401, 404, 415) },
});

const createGroup = createRoute({
  method: 'post',
  path: '/groups',
  tags: ['groups'],
  summary: 'Create an experiment or batch: N runs of one spec, or one run per case, admitted all-or-nothing.',
  security: API_KEY_SECURITY,
  request: { body: jsonBody(CreateGroupInput) },
  responses: {
    201: json(CreatedGroupSchema, 'The group and its queued runs.'),
    ...problemResponses(400, 401, 402, 409, 413, 415, 429),
  },
});

const listGroups = createRoute({
  method: 'get',
  path: '/groups',
  tags: ['groups'],
  security: API_KEY_SECURITY,
  request: { query: ListGroupsQuery },
  responses: { 200: json(GroupPageSchema, 'One page of groups.'), ...problemResponses(400, 401) },
});

const getGroup = createRoute({
  method: 'get',
  path: '/groups/{id}',
  tags: ['groups'],
  summary: "A group with its rollup (runs by status) and latest scoring's aggregate.",
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: { 200: json(GroupSchema, 'The group.'), ...problemResponses(400, 401, 404) },
});

const scoreGroup = createRoute({
  method: 'post',
  path: '/groups/{id}/score',
  tags: ['groups'],
  summary:
    'Apply graders over the group\'s runs: built in exit_code, regex, contains, json_field, threshold; "judge" for model graders.',
  security: API_KEY_SECURITY,
  request: { params: IdParam, body: jsonBody(ScoreGroupInput) },
  responses: {
    201: json(ScoredSchema, 'Scores on runs, aggregate on the group.'),
    ...problemResponses(400, 401, 404, 409, 415),
  },
});

const promoteGroup = createRoute({
  method: 'post',
  path: '/groups/{id}/promote',
  tags: ['groups'],
  summary: 'Experiment → scorecard: the same runs, scored with the given graders.',
  security: API_KEY_SECURITY,
  request: { params: IdParam, body: jsonBody(PromoteGroupInput) },
  responses: { 200: json(GroupSchema, 'The scorecard.'), ...problemResponses(400, 401, 404, 409, 415) },
});

export function groupRoutes({ services }: RouteDeps) {
  const app = createRouter();

  app.openapi(cancelGroup, async (c) => {
    const body = c.req.valid('json');
    const result = await services.groups.cancel(c.get('principal'), c.req.valid('param').id, body.reason);
    return c.json(result, 200);
  });

  app.openapi(createGroup, async (c) => {
    const input = c.req.valid('json');
    const created = await services.groups.create(c.get('principal'), input);
    return c.json(created, 201);
  });

  app.openapi(listGroups, async (c) =>
    c.json(await services.groups.list(c.get('principal'), c.req.valid('query')), 200),
  );

  app.openapi(getGroup, async (c) =>
    c.json(await services.groups.get(c.get('principal'), c.req.valid('param').id), 200),
  );

  app.openapi(scoreGroup, async (c) => {
    const scored = await services.groups.score(
      c.get('principal'),
      c.req.valid('param').id,
      c.req.valid('json'),
    );
    return c.json(scored, 201);
  });

  app.openapi(promoteGroup, async (c) => {
    const group = await services.groups.promote(
      c.get('principal'),
      c.req.valid('param').id,
      c.req.valid('json'),
    );
    return c.json(group, 200);
  });

  return app;
}
