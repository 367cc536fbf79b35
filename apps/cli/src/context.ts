// The connection every command shares: base URL and API key from flags or the environment
// (EVERDICT_URL / EVERDICT, EVERDICT_API_KEY / KEY — the names `pnpm start` prints), the typed client,
// and a raw JSON call for routes newer than the generated types.

import path from 'node:path';
import { ClientError, createClient, type EverdictClient, errorFromResponse } from '@everdict/client';
import { anySignal, type ClearableSignal } from 'any-signal';
import { CliError } from './errors.js';
import type { Io } from './io.js';
import { readStackFile, SECRETS_FILE } from './stack/secrets.js';

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
  call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    /** `key`: another bearer for this call (the operator's service token), instead of the API key. */
    opts?: { extraTimeoutMs?: number; key?: string },
  ): Promise<T>;
}

export const DEFAULT_URL = 'http://localhost:8787';

/** How long one call may go unanswered (env EVERDICT_REQUEST_TIMEOUT_MS); event streams are not bounded. */
export const REQUEST_TIMEOUT_MS = 120_000;

/** How long a call made after Ctrl-C (to report what the command saw) may go unanswered. */
export const AFTER_INTERRUPT_MS = 5_000;

/** EVERDICT_REQUEST_TIMEOUT_MS when it is a positive whole number, else REQUEST_TIMEOUT_MS. */
export function requestTimeoutMs(env: NodeJS.ProcessEnv): number {
  const v = env.EVERDICT_REQUEST_TIMEOUT_MS;
  return v !== undefined && /^\d+$/.test(v) && Number(v) > 0 ? Number(v) : REQUEST_TIMEOUT_MS;
}

/**
 * The signal of one call: aborted past the request timeout, when the call fails as one that got no answer
 * (`network`, exit 4) instead of waiting forever on a hung control plane — and aborted by Ctrl-C (`interrupt`,
 * the Io's signal), when the program answers `interrupted` (130) at once (program.ts). A call made after
 * Ctrl-C (a command asking for what it reports) is bounded by AFTER_INTERRUPT_MS instead; a second Ctrl-C
 * ends the process (main.ts).
 */
export function callSignal(env: NodeJS.ProcessEnv, interrupt?: AbortSignal, extraMs = 0): ClearableSignal {
  const ms = requestTimeoutMs(env) + extraMs;
  if (interrupt?.aborted) return anySignal([AbortSignal.timeout(Math.min(ms, AFTER_INTERRUPT_MS))]);
  // `clear()` unlinks it from `interrupt` (which lives as long as the process) once the call is answered:
  // `AbortSignal.any` would keep every call's signal for the process's life (nodejs/node#55351).
  return anySignal([AbortSignal.timeout(ms), interrupt]);
}

/**
 * A call whose answer a command reports even when Ctrl-C cut it (the status a wait stopped at): cut while
 * unanswered, it is made once more, then bounded by AFTER_INTERRUPT_MS. An answer (a refusal) is not retried.
 */
export async function reportingCall<T>(io: Io, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (io.signal?.aborted && !(e instanceof ClientError && e.status > 0)) return call();
    throw e;
  }
}

/** The origin of `url` with `localhost` as `127.0.0.1` (what `everdict start` prints vs records); null if not a URL. */
function originOf(url: string): string | null {
  try {
    const u = new URL(url);
    if (u.hostname === 'localhost') u.hostname = '127.0.0.1';
    return u.origin;
  } catch {
    return null;
  }
}

/**
 * Flags, then the environment, then the running main job's file (`<EVERDICT_DATA_DIR or .everdict>/
 * main-job.json`, written by `everdict start`), then the default URL. The main job's key goes only to the
 * main job's own URL: a URL given for another control plane never receives this machine's admin key.
 */
export function resolveConnection(
  opts: GlobalOptions,
  env: NodeJS.ProcessEnv,
): { url: string; key?: string } {
  const stack = mainJobFile(env);
  const url = (opts.url ?? env.EVERDICT_URL ?? env.EVERDICT ?? stack.url ?? DEFAULT_URL).replace(/\/+$/, '');
  const stackKey = isMainJobUrl(url, stack) ? stack.apiKey : undefined;
  const key = opts.key ?? env.EVERDICT_API_KEY ?? env.KEY ?? stackKey;
  return key ? { url, key } : { url };
}

/**
 * The operator's service token for `url` (`/internal/*`: shared runners): EVERDICT_INTERNAL_TOKEN, else the running
 * main job's own (its file) — only for the main job's own URL, as its admin key.
 */
export function operatorToken(url: string, env: NodeJS.ProcessEnv): string | undefined {
  if (env.EVERDICT_INTERNAL_TOKEN) return env.EVERDICT_INTERNAL_TOKEN;
  const stack = mainJobFile(env);
  return isMainJobUrl(url, stack) ? stack.internalToken : undefined;
}

/** The running main job's file (`<EVERDICT_DATA_DIR or .everdict>/main-job.json`), or nothing. */
const mainJobFile = (env: NodeJS.ProcessEnv) =>
  readStackFile(path.resolve(env.EVERDICT_DATA_DIR ?? '.everdict'));

/** Whether `url` is the main job's own: only there do its admin key and service token go. */
function isMainJobUrl(url: string, stack: { url?: string }): boolean {
  return originOf(url) !== null && originOf(url) === originOf(stack.url ?? DEFAULT_URL);
}

/** Where the URL came from, for a usage error that names it. */
function urlSource(opts: GlobalOptions, env: NodeJS.ProcessEnv): string {
  if (opts.url !== undefined) return '--url';
  if (env.EVERDICT_URL !== undefined) return 'EVERDICT_URL';
  if (env.EVERDICT !== undefined) return 'EVERDICT';
  return `the main job's ${SECRETS_FILE}`;
}

/** An http(s) URL of the control plane; anything else (`--url localhost:8787`, a typo) is a usage error (2). */
function checkUrl(url: string, source: string): void {
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {
    /* not a URL */
  }
  if (protocol !== 'http:' && protocol !== 'https:')
    throw new CliError('usage', `${source} ${url} is not an http:// or https:// URL of the control plane`);
}

export function makeContext(opts: GlobalOptions, io: Io): Context {
  const { url, key } = resolveConnection(opts, io.env);
  checkUrl(url, urlSource(opts, io.env));
  // Not cleared: the client reads the answer's body after `fetch` returns, and Ctrl-C must still cut it. A
  // command makes few such calls, and they end with it.
  const bounded: typeof fetch = (input, init) =>
    fetch(input, { ...init, signal: callSignal(io.env, io.signal) });
  const client = createClient({ baseUrl: url, ...(key ? { token: key } : {}), fetch: bounded });
  return {
    url,
    key,
    client,
    io,
    call: async (method, path, body, opts) => {
      const signal = callSignal(io.env, io.signal, opts?.extraTimeoutMs ?? 0);
      try {
        return await rawCall(url, opts?.key ?? key, method, path, body, signal);
      } finally {
        signal.clear();
      }
    },
  };
}

export async function rawCall<T>(
  url: string,
  key: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
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
      ...(signal ? { signal } : {}),
    });
  } catch (e) {
    throw new ClientError('network', 0, `no answer from the control plane: ${(e as Error).message}`);
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw new ClientError('network', 0, `the answer broke off: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) throw errorFromResponse(res, parsed);
  // A 2xx that is not JSON (an HTML page: --url naming something else) is no answer of the control plane.
  if (text && parsed === undefined)
    throw new ClientError(
      'bad_response',
      res.status,
      `the answer from ${url} is not JSON (${res.headers.get('content-type') ?? 'no content type'}): is it the control plane?`,
    );
  return parsed as T;
}

/** How an action hands its work to the program: the promise resolves with the exit code. */
export type Done = (work: Promise<number>) => Promise<void>;
