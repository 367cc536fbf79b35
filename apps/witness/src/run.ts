// The witness process: metrics server up, then poll every log every interval until stopped. A fork on any
// log ends the process with exit code 3 after its error line and its `everdict_witness_fork_total`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { WitnessConfig } from './config.js';
import { readWitnessKey } from './config.js';
import { WitnessError } from './errors.js';
import type { WitnessMetrics } from './metrics.js';
import { loadState } from './state.js';
import { type PollOutcome, Witness } from './witness.js';

export const EXIT_FORK = 3;

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startMetricsServer(
  metrics: WitnessMetrics,
  port: number,
  host: string,
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics') {
      metrics.registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(text);
        })
        .catch(() => {
          res.writeHead(500).end();
        });
      return;
    }
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface RunResult {
  readonly exitCode: 0 | 1 | 3;
  readonly outcomes: PollOutcome[];
}

/** Polls until `signal` aborts (exit 0), a fork (exit 3), or — with `once` — after one round. */
export async function runWitness(
  config: WitnessConfig,
  logger: Logger,
  metrics: WitnessMetrics,
  signal: AbortSignal,
): Promise<RunResult> {
  const witness = new Witness({
    key: readWitnessKey(config.keyFile),
    statePath: config.stateFile,
    state: loadState(config.stateFile),
    metrics,
    logger,
  });
  logger.info({ witness: witness.publicKey, logs: config.logs.map((l) => l.url) }, 'witness started');
  const outcomes: PollOutcome[] = [];
  let failedRound = false;
  while (!signal.aborted) {
    failedRound = false;
    for (const target of config.logs) {
      try {
        const outcome = await witness.poll(target);
        outcomes.push(outcome);
        if (outcome.kind === 'fork') return { exitCode: EXIT_FORK, outcomes };
      } catch (e) {
        if (!(e instanceof WitnessError)) throw e;
        failedRound = true;
        metrics.pollErrors.inc({ log: target.url });
        logger.warn({ log: target.url, code: e.code, detail: e.detail }, 'poll failed');
      }
    }
    if (config.once) break;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, config.intervalMs);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(t);
          resolve();
        },
        { once: true },
      );
    });
  }
  return { exitCode: config.once && failedRound ? 1 : 0, outcomes };
}
