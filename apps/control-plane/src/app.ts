// Composition of the HTTP app: edge middleware (request id + logging + metrics, draining, body
// limit, auth by path), the route groups, problem+json for everything that is not a success, and the
// OpenAPI document generated from the routes' zod schemas. Built from services; starts nothing.
import { randomUUID } from 'node:crypto';
import type { OpenAPIHono } from '@hono/zod-openapi';
import { routePath } from 'hono/route';
import { CHALLENGE, requireApiKey, requireInternalToken } from './auth/middleware.js';
import { consoleRoutes } from './console/routes.js';
import type { ConsoleSource } from './console/source.js';
import { ControlPlaneError } from './errors.js';
import { agentHostRoutes } from './http/agent-hosts.js';
import { agentRoutes } from './http/agents.js';
import { artifactRoutes } from './http/artifacts.js';
import { bodyLimit } from './http/body-limit.js';
import type { RouteDeps } from './http/deps.js';
import type { AppEnv } from './http/env.js';
import { groupRoutes } from './http/groups.js';
import { internalRoutes } from './http/internal.js';
import { guardJsonBodies } from './http/json-guard.js';
import { Lifecycle } from './http/lifecycle.js';
import { logRoutes } from './http/log.js';
import { createRouter, openApiDocument } from './http/openapi.js';
import { errorToProblem, problem, sendProblem } from './http/problem.js';
import { requireRunner } from './http/runner-protocol.js';
import { runnerRoutes } from './http/runners.js';
import { runRoutes } from './http/runs.js';
import { sandboxRoutes } from './http/sandboxes.js';
import { subscriptionRoutes } from './http/subscriptions.js';
import { systemRoutes } from './http/system.js';
import { tenantRoutes } from './http/tenants.js';
import { trajectoryRoutes } from './http/trajectories.js';
import type { PublicKeyEntry } from './keys/registry.js';
import type { HeadLog } from './log/head-log.js';
import { type Logger, silentLogger } from './observability/logger.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import type { ControlPlaneServices } from './services/api.js';
import type { TrajectoryService } from './trajectory/service.js';

export const API_VERSION = '0.1.0';

export interface AppOptions {
  readonly services: ControlPlaneServices;
  /** Liveness of the ledger (Core.health). */
  readonly health: () => Promise<{ ok: boolean; dialect: string; reason?: string }>;
  /** EVERDICT_INTERNAL_TOKEN; unset → /internal/* refuses every call. */
  readonly internalToken?: string | undefined;
  /** EVERDICT_METRICS_TOKEN; /metrics shows per-tenant series only to a bearer of it (else aggregates). */
  readonly metricsToken?: string | undefined;
  /** The public keys GET /keys lists (Core.keys.list). */
  readonly keys?: () => Promise<readonly PublicKeyEntry[]>;
  readonly maxBodyBytes?: number;
  readonly log?: Logger;
  readonly metrics?: Metrics;
  readonly lifecycle?: Lifecycle;
  readonly heartbeatMs?: number;
  /** Trajectories (Core.trajectoryService); absent → the trajectory routes answer 503. */
  readonly trajectories?: TrajectoryService | null;
  /** What the activity console reads beyond the services (envelopes, the queue): src/console/source.ts. */
  readonly console?: ConsoleSource;
  /** The head log (Core.headLog): its `/log/*`, `/runs/:id/log`, `/groups/:id/{log,proof}` routes. */
  readonly headLog?: HeadLog | null;
}

export interface BuiltApp {
  readonly app: OpenAPIHono<AppEnv>;
  readonly metrics: Metrics;
  readonly lifecycle: Lifecycle;
  /** The OpenAPI document (what GET /openapi.json serves). */
  document(): unknown;
}

/** Paths behind an API key. Anything else is a system route, internal, or a 404 problem. */
const PUBLIC_PREFIXES = [
  '/runs',
  '/runs:batch',
  '/groups',
  '/subscriptions',
  '/tenants',
  '/tenant',
  '/api-keys',
  '/runners',
  '/sandboxes',
  '/agents',
  '/conversations',
  '/harnesses',
  '/trajectories',
  '/trajectory-policy',
  '/trajectory-deletions',
  '/v1',
] as const;
/** Under a public prefix but authenticated by what it carries (the pairing token is the credential). */
const NO_API_KEY = new Set(['/runners/pair', '/agents/hosts/pair']);
/** The terminal's ticket is its credential (a browser cannot set headers on a WebSocket). */
const TICKETED = /^\/runs\/[^/]+\/terminal$/;
/** Streamed uploads: never buffered by the body limit. */
const STREAMED = /^\/runner\/v1\/runs\/[^/]+\/artifacts$/;

export function buildApp(opts: AppOptions): BuiltApp {
  const log = opts.log ?? silentLogger();
  const metrics = opts.metrics ?? createMetrics();
  const lifecycle = opts.lifecycle ?? new Lifecycle();
  const deps: RouteDeps = {
    services: opts.services,
    metrics,
    lifecycle,
    log,
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    trajectories: opts.trajectories ?? null,
  };
  const app = createRouter();

  // 1. Request id, request logger, per-route metrics (route pattern, never the raw path); every response
  //    (refusals and streams included) says its content type is not to be sniffed.
  app.use('*', async (c, next) => {
    const started = performance.now();
    const inbound = c.req.header('x-request-id');
    const requestId = inbound && /^[\w.:-]{1,128}$/.test(inbound) ? inbound : randomUUID();
    c.set('requestId', requestId);
    c.set('log', lazyChild(log, requestId));
    // Set before the handler, so the response is built with them: `c.header` after it would rebuild the
    // finished response around a stream of its body (hono), which @hono/node-server then pipes out chunk by
    // chunk instead of writing the string it holds — that cost a web Response and a stream read per request.
    c.header('x-request-id', requestId);
    c.header('x-content-type-options', 'nosniff');
    await next();
    // A handler that returned a Response it built itself (not through `c`) carries none of them: add them.
    if (!c.res.headers.has('x-request-id')) {
      c.header('x-request-id', requestId);
      c.header('x-content-type-options', 'nosniff');
    }
    const route =
      c.res.status === 404 && routePath(c, -1) === '*' ? 'unmatched' : routePath(c, -1) || 'unmatched';
    const seconds = (performance.now() - started) / 1000;
    metrics.recordHttp(c.req.method, route, c.res.status, seconds);
    if (log.isLevelEnabled('debug'))
      c.get('log').debug(
        { method: c.req.method, route, status: c.res.status, ms: Math.round(seconds * 1000) },
        'http',
      );
  });
  // 2. Draining: refuse writes, count in-flight requests.
  app.use('*', lifecycle.middleware());
  // 3. Bodies beyond the limit are a 413 problem, counted before anything reads them (the connection stays usable).
  const limit = bodyLimit(opts.maxBodyBytes ?? 1024 * 1024);
  app.use('*', (c, next) => (c.req.method === 'PUT' && STREAMED.test(c.req.path) ? next() : limit(c, next)));
  // 4. What PostgreSQL cannot store (NUL, lone surrogates, nesting past 128) is refused as bad input.
  app.use('*', guardJsonBodies());
  // 5. Auth by path: API keys on the public API, the service token on /internal/*.
  const keyed = requireApiKey(opts.services.auth);
  const apiKey: typeof keyed = (c, next) =>
    NO_API_KEY.has(c.req.path) || TICKETED.test(c.req.path) ? next() : keyed(c, next);
  for (const prefix of PUBLIC_PREFIXES) app.use(prefix, apiKey).use(`${prefix}/*`, apiKey);
  app.use('/internal/*', requireInternalToken(opts.internalToken));
  app.use(
    '/runner/v1/*',
    requireRunner(() => {
      if (!opts.services.runners)
        throw new ControlPlaneError('route_not_found', 'this control plane has no runners');
      return opts.services.runners;
    }),
  );

  let cachedDocument: unknown;
  const document = () => {
    cachedDocument ??= openApiDocument(app, API_VERSION);
    return cachedDocument;
  };

  app.route(
    '/',
    systemRoutes({
      metrics,
      lifecycle,
      health: opts.health,
      document,
      version: API_VERSION,
      metricsToken: opts.metricsToken,
      keys: opts.keys,
    }),
  );
  app.route('/', runRoutes(deps));
  app.route('/', groupRoutes(deps));
  app.route('/', subscriptionRoutes(deps));
  app.route('/', tenantRoutes(deps));
  app.route('/', trajectoryRoutes(deps));
  app.route('/', artifactRoutes(deps));
  app.route('/', internalRoutes(deps));
  app.route('/', runnerRoutes(deps));
  app.route('/', sandboxRoutes(deps));
  app.route('/', consoleRoutes(deps, opts.console));
  if (opts.headLog) app.route('/', logRoutes(opts.headLog));
  app.route('/', agentHostRoutes(deps)); // before agentRoutes: `GET /agents/hosts` is no agent id
  app.route('/', agentRoutes(deps));

  app.notFound((c) =>
    sendProblem(c, problem('route_not_found', `no route for ${c.req.method} ${c.req.path}`)),
  );
  app.onError((err, c) => {
    const mapped = errorToProblem(err);
    const { problem: p, unexpected } = mapped;
    const reqLog = c.get('log') ?? log;
    if (unexpected) reqLog.error({ err, method: c.req.method, path: c.req.path }, 'unhandled error');
    const headers: Record<string, string> = {};
    if (p.status === 401) Object.assign(headers, CHALLENGE);
    if (mapped.retryAfterSeconds !== undefined) headers['retry-after'] = String(mapped.retryAfterSeconds);
    return sendProblem(c, p, headers);
  });

  return { app, metrics, lifecycle, document };
}

/**
 * The request's logger: the pino child carrying its request id is made when the request first logs — most
 * requests never do, and a child (its bindings serialized, redaction set up) cost ≈ 0.5 % of the server's CPU
 * per request on the http shape.
 */
function lazyChild(log: Logger, requestId: string): Logger {
  let child: Logger | undefined;
  return new Proxy(log, {
    get(_target, key) {
      child ??= log.child({ requestId });
      const value = Reflect.get(child, key, child) as unknown;
      return typeof value === 'function' ? value.bind(child) : value;
    },
  });
}
