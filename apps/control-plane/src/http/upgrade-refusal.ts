// A refused WebSocket upgrade (terminal, runner session channel): the upgrade never reached the app, so the
// problem+json answer is written on the raw socket, which is then closed. The problem is the one vocabulary's
// (http/problem.ts): the same `type`, `code`, `title` and `Retry-After` as any refused HTTP request.
import type { Duplex } from 'node:stream';
import { errorToProblem, PROBLEM_CONTENT_TYPE, type Problem } from './problem.js';

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** Writes `p` as the HTTP answer to an upgrade request and closes the socket. */
export function refuseUpgrade(socket: Duplex, p: Problem, retryAfterSeconds?: number): void {
  const body = JSON.stringify(p);
  const retry = retryAfterSeconds === undefined ? '' : `retry-after: ${retryAfterSeconds}\r\n`;
  socket.end(
    `HTTP/1.1 ${p.status} ${REASONS[p.status] ?? 'Error'}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}\r\n${retry}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * Refuses an upgrade for a thrown value, mapped as any request's would be; `onUnexpected` hears the
 * values that are defects of ours (they answer 500 without detail).
 */
export function refuseUpgradeFor(socket: Duplex, thrown: unknown, onUnexpected: (e: unknown) => void): void {
  const mapped = errorToProblem(thrown);
  if (mapped.unexpected) onUnexpected(thrown);
  refuseUpgrade(socket, mapped.problem, mapped.retryAfterSeconds);
}
