// Structured JSON logs (pino). One root logger per process; children carry a component name.
import { type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger } from 'pino';

export function createLogger(
  opts: { level?: LoggerOptions['level']; destination?: NodeJS.WritableStream } = {},
): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    base: { service: 'everdict-control-plane' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Secrets never reach a log line, whichever component logs the request.
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["x-everdict-internal-token"]',
        '*.apiKey',
        '*.secret',
      ],
      censor: '[redacted]',
    },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

/** A logger that writes nowhere: tests and fuzzing use it so the console stays readable. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
