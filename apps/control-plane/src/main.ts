// Process entry: configuration → logger → ledger (migrated, bootstrap key seeded, scheduler started) →
// HTTP server. SIGTERM/SIGINT: stop admitting (writes answer 503), let in-flight requests finish,
// stop the scheduler and finish its writes, close the pool, exit.

import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import { ProcessDriver } from '@everdict/placement-process';
import { serve } from '@hono/node-server';
import { buildApp } from './app.js';
import { generateApiKey } from './auth/secrets.js';
import { ConfigError, loadConfig } from './config.js';
import { consoleSource } from './console/source.js';
import { startCore } from './core.js';
import { openDatabase } from './db/database.js';
import { parseWitnessKeys } from './log/index.js';
import { announceBootstrap } from './observability/bootstrap-banner.js';
import { createLogger } from './observability/logger.js';
import { createMetrics } from './observability/metrics.js';
import { type EmbeddedRunner, pairEmbeddedRunner } from './runners/embedded.js';
import { scriptedJudge } from './services/index.js';
import { terminalServer } from './sessions/terminal.js';
import { makeTraversable } from './sessions/traversable.js';
import { openTrajectoryStore } from './trajectory/store.js';

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? err.message : String(err)}\n`);
    process.exit(78); // EX_CONFIG
  }
  const log = createLogger({ level: config.logLevel });
  const coreLog = log.child({ component: 'core' });
  const started = performance.now();

  if (!config.databaseUrl) mkdirSync(config.dataDir, { recursive: true });
  if (config.sessions.driver === 'process') makeTraversable(config.sessions.placementDir);
  const metrics = createMetrics({ defaultMetrics: true });
  const database = await openDatabase(
    config.databaseUrl
      ? { databaseUrl: config.databaseUrl, poolSize: config.pgPoolMax }
      : { dataDir: path.join(config.dataDir, 'pglite') },
  );
  const beforeCore = performance.now();
  const core = await startCore({
    database,
    signingKey: { file: config.signingKeyFile },
    // An explicit key is installed idempotently; otherwise one is generated only on a first start.
    ...(config.bootstrapApiKey
      ? { bootstrapKey: config.bootstrapApiKey }
      : { generateBootstrapKey: generateApiKey }),
    ...(config.judge === 'scripted' ? { judge: scriptedJudge() } : {}),
    log: (level, msg, fields) => coreLog[level](fields ?? {}, msg),
    metrics: metrics.coreObserver(),
    agents: { requirePaired: config.agents.requirePaired },
    headLog: {
      keyFile: config.headLog.keyFile,
      witnessKeys: parseWitnessKeys(config.headLog.witnessKeys),
      sthIntervalMs: config.headLog.sthIntervalMs,
    },
    scheduler: {
      lease: { leaseMs: config.leaseMs, maxAttempts: config.maxAttempts },
      inlineConcurrency: config.executions,
      pollMs: config.pollMs,
      alonePollMs: config.alonePollMs,
    },
    create: { batchMs: config.createBatchMs },
    artifactMaxBytes: config.artifactMaxBytes,
    ...(config.vacuumCheckMs > 0 ? { vacuum: { checkMs: config.vacuumCheckMs } } : {}),
    ...(config.sessions.driver === 'off'
      ? {}
      : {
          sessions: {
            ...(config.sessions.driver === 'process'
              ? { driver: new ProcessDriver({ stateDir: config.sessions.placementDir }) }
              : {}),
            reaper: { sweepMs: config.sessions.sweepMs },
          },
        }),
    trajectories: openTrajectoryStore({
      dataDir: config.dataDir,
      env: {
        EVERDICT_S3_BUCKET: config.trajectoryStorage.s3Bucket,
        EVERDICT_S3_ENDPOINT: config.trajectoryStorage.s3Endpoint,
        EVERDICT_S3_REGION: config.trajectoryStorage.s3Region,
      },
    }),
  });
  metrics.setQueueDepthSource(() => core.queueDepth());
  log.info(
    {
      database: core.dialect,
      dataDir: config.databaseUrl ? undefined : config.dataDir,
      judge: config.judge,
      trajectories: config.trajectoryStorage.s3Bucket
        ? { s3Bucket: config.trajectoryStorage.s3Bucket }
        : { dir: path.join(config.dataDir, 'trajectories') },
      startupMs: {
        ...(database.startup ?? {}),
        bootstrapAndSchedulerMs: Math.round(performance.now() - beforeCore),
        totalMs: Math.round(performance.now() - started),
      },
    },
    'ledger ready',
  );

  const { app, lifecycle } = buildApp({
    services: core.services,
    keys: () => core.keys.list(),
    health: () => core.health(),
    internalToken: config.internalToken,
    metricsToken: config.metricsToken,
    trajectories: core.trajectoryService,
    console: consoleSource(core),
    headLog: core.headLog,
    maxBodyBytes: config.maxBodyBytes,
    log: log.child({ component: 'http' }),
    metrics,
  });

  // The embedded runner is paired before the server listens: a command run posted at once is placeable.
  let embedded: EmbeddedRunner | undefined;
  const runnerService = core.services.runners;
  if (config.embeddedRunner.enabled && runnerService) {
    const runnerLog = log.child({ component: 'embedded-runner' });
    embedded = await pairEmbeddedRunner({
      stateDir: path.join(config.dataDir, 'runner'),
      slots: config.embeddedRunner.slots,
      ...(config.embeddedRunner.cli ? { cli: config.embeddedRunner.cli } : {}),
      mintToken: () => runnerService.mintSharedPairingToken({ name: 'embedded' }),
      pair: (input) => runnerService.pair(input),
      ledger: core.internals.deps.db,
      log: (level, msg, fields) => runnerLog[level](fields ?? {}, msg),
      graceMs: config.shutdownGraceMs,
    });
  }
  const server = serve(
    { fetch: app.fetch, port: config.port, ...(config.host ? { hostname: config.host } : {}) },
    (info) => {
      log.info({ port: info.port, address: info.address }, 'control plane listening');
      announceBootstrap(log, core.bootstrap, `http://localhost:${info.port}`);
      if (!config.internalToken) log.warn('EVERDICT_INTERNAL_TOKEN unset: /internal/* refuses every call');
      embedded?.start(`http://${loopbackOf(info.address)}:${info.port}`);
    },
  ) as Server;
  // Idle keep-alive sockets outlive the clients' own idle timers (undici's fetch: 4 s; proxies and load
  // balancers: ≈ 60 s), so a client never reuses a socket at the moment this server closes it (`fetch failed`
  // on a loaded machine, where a client's timer runs late). `server.close()` still drops idle sockets at once.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // Terminals: GET /runs/:id/terminal?ticket=… upgrades to a WebSocket (sessions/terminal.ts).
  const terminals = core.services.sessions
    ? terminalServer(core.services.sessions, {
        onError: (err) => log.warn({ err }, 'terminal'),
        watchKey: (keyId, onRevoked) =>
          core.services.auth.watchKeyId?.(keyId, onRevoked) ?? (() => undefined),
      })
    : null;
  // Runners' session channels: GET /runner/v1/sessions upgrades to a WebSocket (runners/sessions/hub.ts).
  const channels = core.sessionHub;
  server.on('upgrade', (req, socket, head) => {
    if (terminals?.upgrade(req, socket, head)) return;
    if (channels?.upgrade(req, socket, head)) return;
    socket.destroy();
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: no longer admitting');
    const force = setTimeout(
      () => {
        log.error('shutdown grace exceeded; exiting');
        process.exit(1);
      },
      config.shutdownGraceMs * 2 + 1_000,
    );
    force.unref();
    try {
      // 0. The embedded runner drains first: its running intervals complete through this server.
      await embedded?.stop();
      // 1. Stop admitting and wait for in-flight requests (their writes commit before they answer).
      const drained = await lifecycle.drain(config.shutdownGraceMs);
      if (!drained.drained)
        log.warn({ inFlight: drained.inFlight }, 'in-flight requests still running at grace end');
      // 2. Stop accepting connections; close the idle keep-alive ones.
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      // 3. Stop the scheduler loops (they finish their current writes) and close the pool.
      await core.close();
      log.info('stopped');
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

/** A listening address as a loopback client reaches it (a wildcard → 127.0.0.1: Node's `::` is dual-stack). */
function loopbackOf(address: string): string {
  if (address === '0.0.0.0' || address === '::' || address === '') return '127.0.0.1';
  return address.includes(':') ? `[${address}]` : address;
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${JSON.stringify({ level: 60, msg: 'control plane failed to start', err: String(err) })}\n`,
  );
  process.exit(1);
});
