// Test helpers: build the real app over the in-memory fake services, and call it in-process.
import { type BuiltApp, buildApp } from '../../app.js';
import { createMetrics } from '../../observability/metrics.js';
import { fakeServices } from './fake-services.js';

export const ADMIN_KEY = 'evd_test_admin_key_0123456789abcdef';
export const INTERNAL_TOKEN = 'internal-token-0123456789abcdef';

export type FakeServices = ReturnType<typeof fakeServices>;

export function fakeApp(
  opts: { maxQueued?: number; maxBodyBytes?: number; heartbeatMs?: number } = {},
): BuiltApp & {
  services: FakeServices;
} {
  const metrics = createMetrics();
  const services = fakeServices({
    bootstrapKey: ADMIN_KEY,
    observe: metrics.coreObserver(),
    ...(opts.maxQueued ? { maxQueued: opts.maxQueued } : {}),
  });
  const built = buildApp({
    services,
    metrics,
    health: async () => ({ ok: true, dialect: 'fake' }),
    internalToken: INTERNAL_TOKEN,
    maxBodyBytes: opts.maxBodyBytes ?? 64 * 1024,
    heartbeatMs: opts.heartbeatMs ?? 50,
  });
  return { ...built, services };
}

type Fetcher = { request(input: string, init?: RequestInit): Response | Promise<Response> };

/** A JSON call with an API key; returns status, content-type and the parsed body. */
export async function call(
  app: Fetcher,
  method: string,
  path: string,
  opts: { key?: string | null; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; type: string; body: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? ADMIN_KEY : opts.key;
  if (key) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body }) });
  const type = res.headers.get('content-type') ?? '';
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  if (type.includes('json') && text) parsed = JSON.parse(text) as Record<string, unknown>;
  return { status: res.status, type, body: parsed, headers: res.headers };
}
