// Request and response plumbing shared by the handlers.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type ApiStatus, errors, StatusError } from './status.js';

export const MAX_BODY_BYTES = 3 * 1024 * 1024; // the apiserver's request size limit

export function sendJson(
  res: ServerResponse,
  code: number,
  body: unknown,
  contentType = 'application/json',
): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendStatus(res: ServerResponse, status: ApiStatus): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, status.code, status);
}

export function statusOf(error: unknown): ApiStatus {
  if (error instanceof StatusError) return error.status;
  return errors.internal(error instanceof Error ? error.message : String(error)).status;
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new StatusError({
        ...errors.badRequest('request entity too large').status,
        code: 413,
        reason: 'RequestEntityTooLarge',
      });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const body = await readBody(req);
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw errors.badRequest(`the body of the request was not valid JSON: ${(error as Error).message}`);
  }
}

/** Query parameters that may repeat (exec's `command`) and single ones. */
export class Query {
  constructor(readonly params: URLSearchParams) {}
  get(name: string): string | null {
    return this.params.get(name);
  }
  all(name: string): string[] {
    return this.params.getAll(name);
  }
  flag(name: string): boolean {
    const v = this.params.get(name);
    return v === 'true' || v === '1';
  }
  int(name: string): number | undefined {
    const v = this.params.get(name);
    if (v === null || v === '') return undefined;
    const n = Number(v);
    if (!Number.isInteger(n)) throw errors.badRequest(`invalid value for ${name}: ${v}`);
    return n;
  }
}

/** Whether the client asked for a meta.k8s.io Table (kubectl's human output does). */
export function wantsTable(req: IncomingMessage): boolean {
  const accept = req.headers.accept ?? '';
  return accept.split(',').some((part) => part.includes('as=Table') && part.includes('g=meta.k8s.io'));
}

export const TABLE_CONTENT_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
