// The connection every command shares: base URL and API key from flags or the environment
// (EVERDICT_URL / EVERDICT, EVERDICT_API_KEY / KEY — the names `pnpm start` prints), the typed client,
// and a raw JSON call for routes newer than the generated types.

import path from 'node:path';
import { ClientError, createClient, type EverdictClient, errorFromResponse } from '@everdict/client';
import type { Io } from './io.js';
import { readStackFile } from './stack/secrets.js';

export interface GlobalOptions {
  url?: string;
  key?: string;
}

export interface Context {
  readonly url: string;
  readonly key: string | undefined;
  readonly client: EverdictClient;
  readonly io: Io;
  /** A JSON call to any route (the typed client covers what the generated document has). */
  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
}

export const DEFAULT_URL = 'http://localhost:8787';

/**
 * Flags, then the environment, then the running main job's file (`<EVERDICT_DATA_DIR or .everdict>/
 * main-job.json`, written by `everdict start`), then the default URL.
 */
export function resolveConnection(
  opts: GlobalOptions,
  env: NodeJS.ProcessEnv,
): { url: string; key?: string } {
  const stack = readStackFile(path.resolve(env.EVERDICT_DATA_DIR ?? '.everdict'));
  const url = (opts.url ?? env.EVERDICT_URL ?? env.EVERDICT ?? stack.url ?? DEFAULT_URL).replace(/\/+$/, '');
  const key = opts.key ?? env.EVERDICT_API_KEY ?? env.KEY ?? stack.apiKey;
  return key ? { url, key } : { url };
}

export function makeContext(opts: GlobalOptions, io: Io): Context {
  const { url, key } = resolveConnection(opts, io.env);
  const client = createClient({ baseUrl: url, ...(key ? { token: key } : {}) });
  return {
    url,
    key,
    client,
    io,
    call: (method, path, body) => rawCall(url, key, method, path, body),
  };
}

export async function rawCall<T>(
  url: string,
  key: string | undefined,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(`${url}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (e) {
    throw new ClientError('network', 0, `no answer from the control plane: ${(e as Error).message}`);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) throw errorFromResponse(res, parsed);
  return parsed as T;
}

/** How an action hands its work to the program: the promise resolves with the exit code. */
export type Done = (work: Promise<number>) => Promise<void>;
