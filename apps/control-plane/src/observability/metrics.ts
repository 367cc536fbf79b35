// Prometheus metrics (prom-client) on registries of our own, never the global one, so every app
// instance (tests build many) has its own. Queue depth is read from the ledger at scrape time —
// a count derived from the ledger, not a counter kept in memory that a second replica would contradict.
// Tenant ids are the one label that says who uses the service: they are rendered only when asked for
// (`render({ perTenant: true })`, /metrics with EVERDICT_METRICS_TOKEN); otherwise queue depth is by class.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface QueueDepthRow {
  readonly tenant: string;
  readonly class: string;
  readonly depth: number;
}

export type AdmissionOutcome = 'admitted' | 'refused_402' | 'refused_429' | 'refused_other';

/** What the core calls (structurally `CoreOptions.metrics`): every gate decision, every dispatch. */
export interface CoreMetricsObserver {
  admission(outcome: AdmissionOutcome, kind: string, rule?: string): void;
  dispatched(latencySeconds: number, runClass: string): void;
  deleted(what: 'trajectory' | 'artifact' | 'upload', count: number): void;
}

export interface Metrics {
  readonly registry: Registry;
  /**
   * The observer to pass to `startCore({ metrics })`: the core counts admissions from every source (API,
   * groups, subscriptions, agent bridge) at the gate, and dispatch latency. It is the only admission count.
   */
  coreObserver(): CoreMetricsObserver;
  /** Time from a run being queued to being handed to its placement, in seconds. */
  observeDispatchLatency(seconds: number, runClass: string): void;
  /** Count one HTTP response (route pattern, not raw path, to keep label cardinality bounded). */
  recordHttp(method: string, route: string, status: number, seconds: number): void;
  /** Tell the queue-depth gauge where to read from (set once the services exist). */
  setQueueDepthSource(source: () => Promise<readonly QueueDepthRow[]>): void;
  /** The exposition; `perTenant` adds the series labelled by tenant id (queue depth per tenant and class). */
  render(opts?: { perTenant?: boolean }): Promise<{ contentType: string; body: string }>;
}

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'everdict_' });

  let depthSource: (() => Promise<readonly QueueDepthRow[]>) | undefined;
  // Queue depth lives in two registries of its own: by class (always rendered) and by tenant and class
  // (rendered only when per-tenant series are asked for). Each is read from the ledger when rendered.
  const byClassRegistry = new Registry();
  const byTenantRegistry = new Registry();
  new Gauge({
    name: 'everdict_queue_depth',
    help: 'Queued runs per scheduling class (all tenants), read from the ledger at scrape time.',
    labelNames: ['class'] as const,
    registers: [byClassRegistry],
    async collect() {
      this.reset();
      if (!depthSource) return;
      const sums = new Map<string, number>();
      for (const row of await depthSource()) sums.set(row.class, (sums.get(row.class) ?? 0) + row.depth);
      for (const [runClass, depth] of sums) this.set({ class: runClass }, depth);
    },
  });
  new Gauge({
    name: 'everdict_queue_depth',
    help: 'Queued runs per tenant and scheduling class, read from the ledger at scrape time.',
    labelNames: ['tenant', 'class'] as const,
    registers: [byTenantRegistry],
    async collect() {
      this.reset();
      if (!depthSource) return;
      for (const row of await depthSource()) this.set({ tenant: row.tenant, class: row.class }, row.depth);
    },
  });
  const admissions = new Counter({
    name: 'everdict_admissions_total',
    help: 'Runs through the admission gate, by outcome and refusing rule.',
    labelNames: ['outcome', 'kind', 'rule'] as const,
    registers: [registry],
  });
  const dispatch = new Histogram({
    name: 'everdict_dispatch_latency_seconds',
    help: 'Seconds from queued to dispatched.',
    labelNames: ['class'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const deletions = new Counter({
    name: 'everdict_storage_deleted_total',
    help: 'Objects the background passes deleted: sealed trajectories (retention), artifacts no run needs and staged uploads left behind (the artifact sweep).',
    labelNames: ['what'] as const,
    registers: [registry],
  });
  const httpRequests = new Counter({
    name: 'everdict_http_requests_total',
    help: 'HTTP responses by method, route pattern and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpSeconds = new Histogram({
    name: 'everdict_http_request_duration_seconds',
    help: 'HTTP handling time by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });

  const count = (outcome: AdmissionOutcome, kind: string, rule?: string) =>
    admissions.inc({ outcome, kind: boundedLabel(kind), rule: rule ?? '' });
  return {
    registry,
    coreObserver() {
      return {
        admission: count,
        dispatched: (seconds, runClass) => dispatch.observe({ class: runClass }, Math.max(0, seconds)),
        deleted: (what, count) => deletions.inc({ what }, count),
      };
    },
    observeDispatchLatency(seconds, runClass) {
      dispatch.observe({ class: runClass }, seconds);
    },
    recordHttp(method, route, status, seconds) {
      httpRequests.inc({ method, route, status: String(status) });
      httpSeconds.observe({ method, route }, seconds);
    },
    setQueueDepthSource(source) {
      depthSource = source;
    },
    async render(opts = {}) {
      const depth = opts.perTenant ? byTenantRegistry : byClassRegistry;
      const [main, queue] = await Promise.all([registry.metrics(), depth.metrics()]);
      return { contentType: registry.contentType, body: `${main}${queue}` };
    },
  };
}

/** Label values come from client input (a run's kind): keep them short and shaped. */
function boundedLabel(value: string): string {
  return /^[a-z][a-z0-9_-]{0,31}$/.test(value) ? value : 'other';
}
