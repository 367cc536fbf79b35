// Agents (issue 16): the registry (versioned), conversations and their turns, approvals (GET /runs/:id/input
// lists what a turn waits on, POST answers an approval) — behind an API key;
// and the agent service's side behind the service token (/internal/agent/v1/*): turn leases (long-poll),
// heartbeats, tool calls, transcript reads/writes, a parked turn's decline by a holder that cannot resume it
// (agents/declines.ts). Leased transition reports go to /internal/agent-run-events with `epoch` + `holder`
// (internal.ts hands them to the agent service).
import { createRoute, z } from '@hono/zod-openapi';
import {
  CallInput,
  CreateAgentInput,
  CreateConversationInput,
  DeclineInput,
  HeartbeatRequest,
  HeldLease,
  InputAnswer,
  LeaseRequest,
  MessageInput,
  PatchAgentInput,
  ReadInput,
  TranscriptAppend,
  TranscriptQuery,
} from '../agents/schemas.js';
import type { AgentService } from '../agents/service.js';
import { ControlPlaneError } from '../errors.js';
import {
  AgentSchema,
  PendingCallSchema,
  ResolutionSchema,
  TurnDeclinedSchema,
  TurnLeaseSchema,
} from './agent-schemas.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, INTERNAL_SECURITY, json, jsonBody } from './openapi.js';
import { problemResponses } from './problem.js';
import { GroupSchema, IdParam, RunSchema } from './schemas.js';

export { AgentSchema };

const RunIdParam = IdParam;

const routes = {
  createAgent: createRoute({
    method: 'post',
    path: '/agents',
    tags: ['agents'],
    summary: 'Register an agent (version 1): name, model, system prompt, tools, envelope, enabled.',
    security: API_KEY_SECURITY,
    request: { body: jsonBody(CreateAgentInput) },
    responses: {
      201: json(z.object({ agent: AgentSchema }).openapi('CreatedAgent'), 'The agent.'),
      ...problemResponses(400, 401, 413, 415),
    },
  }),
  listAgents: createRoute({
    method: 'get',
    path: '/agents',
    tags: ['agents'],
    security: API_KEY_SECURITY,
    responses: {
      200: json(z.object({ items: z.array(AgentSchema) }).openapi('AgentList'), 'The tenant’s agents.'),
      ...problemResponses(401),
    },
  }),
  getAgent: createRoute({
    method: 'get',
    path: '/agents/{id}',
    tags: ['agents'],
    security: API_KEY_SECURITY,
    request: { params: IdParam },
    responses: { 200: json(AgentSchema, 'The agent (current version).'), ...problemResponses(401, 404) },
  }),
  patchAgent: createRoute({
    method: 'patch',
    path: '/agents/{id}',
    tags: ['agents'],
    summary: 'Change an agent: a behaviour change makes a new version; `enabled: false` stops activations.',
    security: API_KEY_SECURITY,
    request: { params: IdParam, body: jsonBody(PatchAgentInput) },
    responses: { 200: json(AgentSchema, 'The agent now.'), ...problemResponses(400, 401, 404, 413, 415) },
  }),
  createConversation: createRoute({
    method: 'post',
    path: '/conversations',
    tags: ['agents'],
    summary: 'A conversation with an agent: a run group of kind `conversation`.',
    security: API_KEY_SECURITY,
    request: { body: jsonBody(CreateConversationInput) },
    responses: {
      201: json(z.object({ group: GroupSchema }).openapi('CreatedConversation'), 'The conversation.'),
      ...problemResponses(400, 401, 404, 413, 415),
    },
  }),
  message: createRoute({
    method: 'post',
    path: '/conversations/{id}/messages',
    tags: ['agents'],
    summary: 'A message: a turn (agent run, interactive, member-caused) through the one gate.',
    security: API_KEY_SECURITY,
    request: { params: IdParam, body: jsonBody(MessageInput) },
    responses: {
      202: json(z.object({ run: RunSchema }).openapi('CreatedTurn'), 'The queued turn.'),
      ...problemResponses(400, 401, 402, 404, 409, 413, 415, 429),
    },
  }),
  pending: createRoute({
    method: 'get',
    path: '/runs/{id}/input',
    tags: ['agents'],
    summary:
      'What a turn waits on (its creator or an admin): each dispatched call not resolved yet, with its id — answer an approval with POST.',
    security: API_KEY_SECURITY,
    request: { params: RunIdParam },
    responses: {
      200: json(
        z
          .object({
            runId: z.string(),
            status: z.string(),
            pending: z.array(PendingCallSchema),
            declined: z
              .array(
                z.object({
                  holder: z.string(),
                  reason: z.enum(['manifest_mismatch', 'snapshot_mismatch']),
                  at: z.string(),
                }),
              )
              .optional()
              .openapi({
                description:
                  'The agent hosts that declined to resume the turn (none is offered it again while it declares the capabilities it declined under); absent when none did.',
              }),
          })
          .openapi('PendingInput'),
        'The calls still waiting, in dispatch order.',
      ),
      ...problemResponses(401, 403, 404),
    },
  }),
  input: createRoute({
    method: 'post',
    path: '/runs/{id}/input',
    tags: ['agents'],
    summary: 'Answer a pending approval of a turn (its creator or an admin): the parked turn becomes ready.',
    security: API_KEY_SECURITY,
    request: { params: RunIdParam, body: jsonBody(InputAnswer) },
    responses: {
      200: json(
        z
          .object({
            run: RunSchema,
            callId: z.string(),
            resolution: z.object({ approved: z.boolean(), note: z.string().optional(), by: z.string() }),
          })
          .openapi('InputAnswered'),
        'The answer, recorded.',
      ),
      ...problemResponses(400, 401, 403, 404, 409, 413, 415),
    },
  }),
  lease: createRoute({
    method: 'post',
    path: '/internal/agent/v1/leases',
    tags: ['internal'],
    summary: 'Lease ready turns (new, or parked with every call resolved); long-poll up to `waitMs`.',
    security: INTERNAL_SECURITY,
    request: { body: jsonBody(LeaseRequest) },
    responses: {
      200: json(z.object({ leases: z.array(TurnLeaseSchema) }).openapi('TurnLeases'), 'Leases granted.'),
      ...problemResponses(400, 401, 415),
    },
  }),
  heartbeat: createRoute({
    method: 'post',
    path: '/internal/agent/v1/heartbeat',
    tags: ['internal'],
    security: INTERNAL_SECURITY,
    request: { body: jsonBody(HeartbeatRequest) },
    responses: {
      200: json(z.object({ lost: z.array(z.string()) }).openapi('TurnHeartbeat'), 'Leases no longer held.'),
      ...problemResponses(400, 401, 415),
    },
  }),
  call: createRoute({
    method: 'post',
    path: '/internal/agent/v1/runs/{id}/calls',
    tags: ['internal'],
    summary: 'Dispatch a tool call of a leased turn: a caused run through the gate, or an approval request.',
    security: INTERNAL_SECURITY,
    request: { params: RunIdParam, body: jsonBody(CallInput) },
    responses: {
      201: json(
        z
          .object({
            callId: z.string(),
            runId: z.string().nullable(),
            groupId: z.string().optional(),
            runIds: z.array(z.string()).optional(),
          })
          .openapi('CallDispatched'),
        'Dispatched.',
      ),
      ...problemResponses(400, 401, 402, 404, 409, 415, 422, 429),
    },
  }),
  decline: createRoute({
    method: 'post',
    path: '/internal/agent/v1/runs/{id}/decline',
    tags: ['internal'],
    summary:
      'The holder of a parked turn’s lease cannot resume it (the record refuses its manifest, or the stored transcript is not the parked snapshot): the lease is released with no attempt counted, and the turn is not offered to this holder again while it declares the same `capabilities` — or fails `no_compatible_host` when no paired host is left to take it. Idempotent per lease; a stale epoch is 409 `stale_lease`.',
    security: INTERNAL_SECURITY,
    request: { params: RunIdParam, body: jsonBody(DeclineInput) },
    responses: {
      200: json(TurnDeclinedSchema, 'What the decline did.'),
      ...problemResponses(400, 401, 404, 409, 415),
    },
  }),
  resolutions: createRoute({
    method: 'post',
    path: '/internal/agent/v1/runs/{id}/resolutions',
    tags: ['internal'],
    security: INTERNAL_SECURITY,
    request: { params: RunIdParam, body: jsonBody(HeldLease) },
    responses: {
      200: json(
        z.object({ resolutions: z.array(ResolutionSchema) }).openapi('CallResolutions'),
        'Results so far.',
      ),
      ...problemResponses(400, 401, 404, 409, 415),
    },
  }),
  read: createRoute({
    method: 'post',
    path: '/internal/agent/v1/runs/{id}/read',
    tags: ['internal'],
    summary: 'A run of the turn’s tenant: outputs, or a page of its trajectory.',
    security: INTERNAL_SECURITY,
    request: { params: RunIdParam, body: jsonBody(ReadInput) },
    responses: {
      200: json(z.record(z.string(), z.unknown()).openapi('RunRead'), 'What was read.'),
      ...problemResponses(400, 401, 404, 409, 415, 503),
    },
  }),
  append: createRoute({
    method: 'post',
    path: '/internal/agent/v1/runs/{id}/transcript',
    tags: ['internal'],
    summary: 'Append TraceEvents to a leased turn’s transcript (its trajectory).',
    security: INTERNAL_SECURITY,
    request: { params: RunIdParam, body: jsonBody(TranscriptAppend) },
    responses: {
      202: json(z.object({ eventCount: z.number().int() }).openapi('TranscriptAppended'), 'Stored.'),
      ...problemResponses(400, 401, 404, 409, 415, 503),
    },
  }),
  transcript: createRoute({
    method: 'get',
    path: '/internal/agent/v1/runs/{id}/transcript',
    tags: ['internal'],
    security: INTERNAL_SECURITY,
    request: { params: RunIdParam, query: TranscriptQuery },
    responses: {
      200: json(
        z
          .object({
            events: z.array(z.unknown()),
            nextOffset: z.number().int(),
            eventCount: z.number().int(),
          })
          .openapi('TranscriptPage'),
        'A page of the transcript.',
      ),
      ...problemResponses(400, 401, 404, 409, 503),
    },
  }),
};

/** The agent service, or 404 `route_not_found` where this control plane runs none. */
export function agentServiceOf(services: RouteDeps['services']): () => AgentService {
  return () => {
    if (!services.agents) throw new ControlPlaneError('route_not_found', 'this control plane has no agents');
    return services.agents;
  };
}

export function agentRoutes({ services, lifecycle }: RouteDeps) {
  const app = createRouter();
  const svc = agentServiceOf(services);
  app.openapi(routes.createAgent, async (c) =>
    c.json({ agent: await svc().create(c.get('principal'), c.req.valid('json')) }, 201),
  );
  app.openapi(routes.listAgents, async (c) => c.json({ items: await svc().list(c.get('principal')) }, 200));
  app.openapi(routes.getAgent, async (c) =>
    c.json(await svc().get(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(routes.patchAgent, async (c) =>
    c.json(await svc().patch(c.get('principal'), c.req.valid('param').id, c.req.valid('json')), 200),
  );
  app.openapi(routes.createConversation, async (c) =>
    c.json({ group: await svc().createConversation(c.get('principal'), c.req.valid('json')) }, 201),
  );
  app.openapi(routes.message, async (c) =>
    c.json(
      { run: await svc().message(c.get('principal'), c.req.valid('param').id, c.req.valid('json')) },
      202,
    ),
  );
  app.openapi(routes.pending, async (c) =>
    c.json(await svc().pending(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(routes.input, async (c) =>
    c.json(await svc().answer(c.get('principal'), c.req.valid('param').id, c.req.valid('json')), 200),
  );
  app.openapi(routes.lease, async (c) =>
    c.json(await lifecycle.poll(c.req.raw.signal, (signal) => svc().lease(c.req.valid('json'), signal)), 200),
  );
  app.openapi(routes.heartbeat, async (c) => c.json(await svc().heartbeat(c.req.valid('json')), 200));
  app.openapi(routes.call, async (c) =>
    c.json(await svc().dispatch(c.req.valid('param').id, c.req.valid('json')), 201),
  );
  app.openapi(routes.decline, async (c) =>
    c.json(await svc().decline(c.req.valid('param').id, c.req.valid('json')), 200),
  );
  app.openapi(routes.resolutions, async (c) =>
    c.json(await svc().resolutions(c.req.valid('param').id, c.req.valid('json')), 200),
  );
  app.openapi(routes.read, async (c) =>
    c.json(await svc().read(c.req.valid('param').id, c.req.valid('json')), 200),
  );
  app.openapi(routes.append, async (c) =>
    c.json(await svc().append(c.req.valid('param').id, c.req.valid('json')), 202),
  );
  app.openapi(routes.transcript, async (c) =>
    c.json(await svc().transcript(c.req.valid('param').id, c.req.valid('query')), 200),
  );
  return app;
}
