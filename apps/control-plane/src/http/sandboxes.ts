// /sandboxes — held-open sandbox runs (kind sandbox, lifetime session): open through the one gate, exec,
// touch, close, suspend (image park), resume, list; and the terminal: a ticket, then a WebSocket upgrade on
// /runs/:id/terminal (the upgrade itself is the node server's `upgrade` listener, sessions/terminal.ts).
import { createRoute, z } from '@hono/zod-openapi';
import { ControlPlaneError } from '../errors.js';
import { resumeSession, suspendSession } from '../sessions/park.js';
import type { SessionService } from '../sessions/service.js';
import {
  ExecInput,
  ExecView,
  OpenSandboxInput,
  ResumeInput,
  SessionView,
  TicketView,
  TouchInput,
} from '../sessions/types.js';
import type { RouteDeps } from './deps.js';
import { API_KEY_SECURITY, createRouter, json } from './openapi.js';
import { problemResponses } from './problem.js';
import { CreatedRunSchema, IdParam, RunSchema } from './schemas.js';

const body = <T extends z.ZodType>(schema: T, required = true) => ({
  body: { required, content: { 'application/json': { schema } } },
});

const SessionListSchema = z.object({ items: z.array(SessionView) }).openapi('SessionList');
const ExecSchema = ExecView;
const SessionSchema = SessionView;
const TicketSchema = TicketView;

const open = createRoute({
  method: 'post',
  path: '/sandboxes',
  tags: ['sandboxes'],
  summary:
    'Open a held-open sandbox (a session run): admitted on the session lane, compute provisioned first.',
  security: API_KEY_SECURITY,
  request: body(OpenSandboxInput),
  responses: {
    201: json(CreatedRunSchema, 'Open (running); the run id is the sandbox id.'),
    ...problemResponses(400, 401, 402, 409, 413, 415, 422, 429, 503),
  },
});
const list = createRoute({
  method: 'get',
  path: '/sandboxes',
  tags: ['sandboxes'],
  summary: "The tenant's open and parked sessions, with TTL left and what they burn.",
  security: API_KEY_SECURITY,
  responses: { 200: json(SessionListSchema, 'Sessions, newest first.'), ...problemResponses(401) },
});
const get = createRoute({
  method: 'get',
  path: '/sandboxes/{id}',
  tags: ['sandboxes'],
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: { 200: json(SessionSchema, 'The session.'), ...problemResponses(400, 401, 403, 404, 409) },
});
const exec = createRoute({
  method: 'post',
  path: '/sandboxes/{id}/exec',
  tags: ['sandboxes'],
  summary: 'Run a command to completion in the session (creator or admin); 1 MiB kept per stream.',
  security: API_KEY_SECURITY,
  request: { params: IdParam, ...body(ExecInput) },
  responses: {
    200: json(ExecSchema, 'The result (a non-zero exit or a limit reached is a result).'),
    ...problemResponses(400, 401, 403, 404, 409, 415, 503),
  },
});
const touch = createRoute({
  method: 'post',
  path: '/sandboxes/{id}/touch',
  tags: ['sandboxes'],
  summary: "Extend the expiry to ttlSec from now, up to the tenant's maxSessionTtlSec; never shortens.",
  security: API_KEY_SECURITY,
  request: { params: IdParam, ...body(TouchInput) },
  responses: { 200: json(SessionSchema, 'The session.'), ...problemResponses(400, 401, 403, 404, 409, 415) },
});
const action = (path: string, summary: string, withBody = false) =>
  createRoute({
    method: 'post',
    path,
    tags: ['sandboxes'],
    summary,
    security: API_KEY_SECURITY,
    request: { params: IdParam, ...(withBody ? body(ResumeInput, false) : {}) },
    responses: { 200: json(RunSchema, 'The run.'), ...problemResponses(400, 401, 403, 404, 409, 415, 503) },
  });
const close = action('/sandboxes/{id}/close', 'Close: compute disposed, run succeeded (endReason closed).');
const suspend = action(
  '/sandboxes/{id}/suspend',
  'Image park: the workspace snapshotted into the object store, compute released, run awaiting_input.',
);
const resume = action(
  '/sandboxes/{id}/resume',
  'Restore the park on fresh compute; another snapshot or manifest is refused 409 and nothing changes.',
  true,
);
const ticket = createRoute({
  method: 'post',
  path: '/runs/{id}/terminal-ticket',
  tags: ['sandboxes'],
  summary: 'A single-use, 30 s terminal ticket bound to the run and the caller (creator or admin only).',
  security: API_KEY_SECURITY,
  request: { params: IdParam },
  responses: {
    201: json(TicketSchema, 'The ticket (shown once).'),
    ...problemResponses(400, 401, 403, 404, 409),
  },
});
const terminal = createRoute({
  method: 'get',
  path: '/runs/{id}/terminal',
  tags: ['sandboxes'],
  summary:
    'WebSocket (with ?ticket=): binary frames raw stdin/output, text frames {"type":"resize",cols,rows} / {"type":"exit",code}.',
  request: { params: IdParam, query: z.object({ ticket: z.string().max(200).optional() }) },
  responses: { ...problemResponses(401, 426) },
});

export function sandboxRoutes(deps: RouteDeps) {
  const app = createRouter();
  const sessions = (): SessionService => {
    const s = deps.services.sessions;
    if (!s) throw new ControlPlaneError('route_not_found', 'this control plane holds no sessions');
    return s;
  };
  app.openapi(open, async (c) => c.json(await sessions().open(c.get('principal'), c.req.valid('json')), 201));
  app.openapi(list, async (c) => c.json({ items: await sessions().list(c.get('principal')) }, 200));
  app.openapi(get, async (c) =>
    c.json(await sessions().get(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(exec, async (c) =>
    c.json(await sessions().exec(c.get('principal'), c.req.valid('param').id, c.req.valid('json')), 200),
  );
  app.openapi(touch, async (c) =>
    c.json(await sessions().touch(c.get('principal'), c.req.valid('param').id, c.req.valid('json')), 200),
  );
  app.openapi(close, async (c) =>
    c.json(await sessions().close(c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(suspend, async (c) =>
    c.json(await suspendSession(sessions().core, c.get('principal'), c.req.valid('param').id), 200),
  );
  app.openapi(resume, async (c) => {
    const s = sessions();
    const input = c.req.valid('json' as never) as unknown;
    return c.json(await resumeSession(s.core, c.get('principal'), c.req.valid('param').id, input ?? {}), 200);
  });
  app.openapi(ticket, async (c) =>
    c.json(await sessions().terminalTicket(c.get('principal'), c.req.valid('param').id), 201),
  );
  app.openapi(terminal, () => {
    throw new ControlPlaneError(
      'upgrade_required',
      'the terminal is a WebSocket: connect with Upgrade: websocket',
    );
  });
  return app;
}
