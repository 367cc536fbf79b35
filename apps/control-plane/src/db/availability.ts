// Is this error the database being away (restarting, connections terminated, unreachable, too slow)?
// Such a failure is not a defect: requests answer 503 `database_unavailable` with a Retry-After.

/** SQLSTATE classes/codes of an unavailable server: 08 (connection), 57P01–57P03 (shutdown), 57014. */
const CODES = new Set(['57P01', '57P02', '57P03', '57014', '53300', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE']);
const CODE_PREFIX = '08';
const ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection terminated unexpectedly',
  'terminating connection',
  'the database system is starting up',
  'the database system is shutting down',
  'Query read timeout',
  'connect ECONNREFUSED',
];

/** Seconds a client should wait before retrying while the database is away. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

export function isDatabaseUnavailable(e: unknown, depth = 0): boolean {
  if (typeof e !== 'object' || e === null || depth > 4) return false;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (CODES.has(code) || ERRNO.has(code) || code.startsWith(CODE_PREFIX))) {
    return code.length === 5 || ERRNO.has(code) || CODES.has(code);
  }
  const message = (e as { message?: unknown }).message;
  if (typeof message === 'string' && MESSAGES.some((m) => message.includes(m))) return true;
  // AggregateError (several addresses refused) and wrapped causes.
  const errors = (e as { errors?: unknown }).errors;
  if (Array.isArray(errors) && errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable((e as { cause?: unknown }).cause, depth + 1);
}
