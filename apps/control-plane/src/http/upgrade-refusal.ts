// A refused WebSocket upgrade (terminal, runner session channel): the upgrade never reached the app, so the
// problem+json answer is written on the raw socket, which is then closed.
import type { Duplex } from 'node:stream';

export function refuseUpgrade(socket: Duplex, status: number, code: string, message: string): void {
  const body = JSON.stringify({
    type: `https://everdict.dev/problems/${code}`,
    title: code,
    status,
    detail: message,
  });
  socket.end(
    `HTTP/1.1 ${status} ${code}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
