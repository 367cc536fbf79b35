#!/usr/bin/env node
// everdict-witness — polls logs, cosigns the tree heads that extend what it accepted, alarms on a fork.
//   everdict-witness --log URL[=LOGKEY]… --key-file PATH [--state-file PATH] [--interval-ms N]
//                    [--metrics-port N] [--metrics-host H] [--once]
//   everdict-witness keygen PATH     write a new witness seed (mode 0600) and print its public key
// Exit codes: 0 stopped (SIGTERM/SIGINT) or `--once` done · 1 `--once` with a log that did not answer ·
// 2 configuration or state refused · 3 a fork.
import { writeFileSync } from 'node:fs';
import { bytesToHex, generateKeyPair } from '@everdict/headlog';
import { pino } from 'pino';
import { parseConfig } from './config.js';
import { WitnessError } from './errors.js';
import { WitnessMetrics } from './metrics.js';
import { runWitness, startMetricsServer } from './run.js';

const logger = pino({ base: { service: 'everdict-witness' }, level: process.env.LOG_LEVEL ?? 'info' });

async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'keygen') {
    const path = argv[1];
    if (!path || argv.length > 2) throw new WitnessError('BadConfig', 'usage: everdict-witness keygen PATH');
    const key = generateKeyPair();
    try {
      // 'wx': created here or refused, in one step — an existing key (a witness's identity) is never replaced.
      writeFileSync(path, `${bytesToHex(key.secretKey)}\n`, { mode: 0o600, flag: 'wx' });
    } catch (e) {
      const exists = (e as NodeJS.ErrnoException).code === 'EEXIST';
      throw new WitnessError(
        'BadConfig',
        exists ? `${path} exists: not overwritten` : `cannot write ${path}: ${(e as Error).message}`,
      );
    }
    process.stdout.write(`${JSON.stringify({ public_key: bytesToHex(key.publicKey) })}\n`);
    return 0;
  }
  const config = parseConfig(argv, process.env);
  const metrics = new WitnessMetrics();
  const server = await startMetricsServer(metrics, config.metricsPort, config.metricsHost);
  logger.info({ metrics_port: server.port }, 'metrics listening');
  const stop = new AbortController();
  for (const s of ['SIGTERM', 'SIGINT'] as const) process.once(s, () => stop.abort());
  try {
    return (await runWitness(config, logger, metrics, stop.signal)).exitCode;
  } finally {
    await server.close();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (e) {
  if (!(e instanceof WitnessError)) throw e;
  logger.error({ code: e.code, detail: e.detail }, 'refused to start');
  process.exitCode = 2;
}
