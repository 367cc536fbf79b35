// Unauthenticated system routes: liveness/readiness, Prometheus metrics (tenant ids only for the bearer of
// the metrics token), and the OpenAPI document.
import { createRoute, z } from '@hono/zod-openapi';
import { bearerSecret, constantTimeEqual } from '../auth/secrets.js';
import { DATABASE_RETRY_AFTER_SECONDS } from '../db/availability.js';
import type { PublicKeyEntry } from '../keys/registry.js';
import type { Metrics } from '../observability/metrics.js';
import type { Lifecycle } from './lifecycle.js';
import { createRouter } from './openapi.js';
import { ProblemError, problem, problemResponses, sendProblem } from './problem.js';

export interface SystemDeps {
  readonly metrics: Metrics;
  readonly lifecycle: Lifecycle;
  readonly health: () => Promise<{ ok: boolean; dialect: string; reason?: string }>;
  readonly document: () => unknown;
  readonly version: string;
  /** EVERDICT_METRICS_TOKEN: its bearer sees per-tenant series; everyone else sees aggregates only. */
  readonly metricsToken?: string | undefined;
  /** The public keys verifiers may trust (Core.keys.list); absent → an empty list. */
  readonly keys?: (() => Promise<readonly PublicKeyEntry[]>) | undefined;
}

const KeysSchema = z
  .object({
    keys: z.array(
      z.object({
        kind: z.enum(['control-plane', 'runner', 'agent-host']),
        id: z.string(),
        name: z.string().optional(),
        key: z.string().regex(/^[0-9a-f]{64}$/),
        revokedAt: z.string().optional(),
      }),
    ),
  })
  .openapi('Keys');

const keysRoute = createRoute({
  method: 'get',
  path: '/keys',
  tags: ['system'],
  summary:
    "The Ed25519 public keys that sign attestations: the control plane's own (`kind: control-plane`), then registered runners' and paired agent hosts' (`kind: agent-host`). Pass them to `everdict-runrecord verify --trust-key`.",
  responses: {
    200: { description: 'The keys.', content: { 'application/json': { schema: KeysSchema } } },
  },
});

const HealthSchema = z
  .object({ status: z.literal('ok'), version: z.string(), database: z.string() })
  .openapi('Health');

const healthz = createRoute({
  method: 'get',
  path: '/healthz',
  tags: ['system'],
  summary: 'Liveness and readiness: the ledger answers and the process is not draining.',
  responses: {
    200: { description: 'Healthy.', content: { 'application/json': { schema: HealthSchema } } },
    ...problemResponses(503),
  },
});

const metricsRoute = createRoute({
  method: 'get',
  path: '/metrics',
  tags: ['system'],
  summary:
    'Prometheus exposition: queue depth per class (per tenant too, with the metrics token), admissions by outcome, dispatch latency.',
  security: [{}, { metricsToken: [] }],
  responses: {
    200: { description: 'Prometheus text format.', content: { 'text/plain': { schema: z.string() } } },
  },
});

export function systemRoutes(deps: SystemDeps) {
  const app = createRouter();

  app.openapi(healthz, async (c) => {
    if (deps.lifecycle.draining) throw new ProblemError(problem('shutting_down', 'draining'));
    let health: { ok: boolean; dialect: string; reason?: string };
    try {
      health = await deps.health();
    } catch (e) {
      health = { ok: false, dialect: 'unknown', reason: e instanceof Error ? e.message : String(e) };
    }
    if (!health.ok) {
      const reason = health.reason ?? 'no answer';
      return sendProblem(
        c,
        problem('database_unavailable', `the ledger database does not answer: ${reason}`, { reason }),
        { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
      ) as never;
    }
    return c.json({ status: 'ok' as const, version: deps.version, database: health.dialect }, 200);
  });

  app.openapi(metricsRoute, async (c) => {
    const presented = bearerSecret(c.req.header('authorization'));
    const perTenant =
      deps.metricsToken !== undefined &&
      presented !== undefined &&
      constantTimeEqual(presented, deps.metricsToken);
    const { contentType, body } = await deps.metrics.render({ perTenant });
    return c.text(body, 200, { 'content-type': contentType });
  });

  app.openapi(keysRoute, async (c) => c.json({ keys: [...((await deps.keys?.()) ?? [])] }, 200));

  // The document is generated from the route schemas, not declared as a route of its own.
  app.get('/openapi.json', (c) => c.json(deps.document() as object));

  return app;
}
