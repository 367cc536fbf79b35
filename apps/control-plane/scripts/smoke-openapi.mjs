#!/usr/bin/env node
// Smoke test of the BUILT control plane: start `node dist/main.js` on a fresh temporary data dir (embedded
// PGlite), read its OpenAPI document, and request every operation it lists — with and without credentials,
// with a body built from the operation's schema, an empty one and a salted one, on real and unknown ids.
// Fails (exit 1) on any 5xx, on a document that does not load, or on a server that dies. CI runs it right
// after `pnpm test` (.ci/run); test/dist-smoke.test.ts runs it too, so `pnpm test` catches it.
//
//   node apps/control-plane/scripts/smoke-openapi.mjs [path/to/dist/main.js]
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const main = path.resolve(process.argv[2] ?? path.join(here, '..', 'dist', 'main.js'));
const ADMIN_KEY = 'evd_smoke_admin_key_0123456789abcdef';
const INTERNAL_TOKEN = 'smoke-internal-token-0123456789';
const METRICS_TOKEN = 'smoke-metrics-token-0123456789';
const STARTUP_MS = Number(process.env.SMOKE_STARTUP_MS ?? 180_000);

if (!existsSync(main)) {
  console.error(
    `smoke: ${main} does not exist — build first (pnpm exec turbo run build --filter=@everdict/control-plane...)`,
  );
  process.exit(1);
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'everdict-smoke-'));
const server = spawn(process.execPath, [main], {
  env: {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: '',
    EVERDICT_DATA_DIR: dataDir,
    EVERDICT_BOOTSTRAP_API_KEY: ADMIN_KEY,
    EVERDICT_INTERNAL_TOKEN: INTERNAL_TOKEN,
    EVERDICT_METRICS_TOKEN: METRICS_TOKEN,
    EVERDICT_EMBEDDED_RUNNER: '0',
    LOG_LEVEL: 'info',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const logs = [];
let exited = null;
server.on('exit', (code, signal) => {
  exited = { code, signal };
});
const port = await new Promise((resolve, reject) => {
  const timer = setTimeout(
    () => reject(new Error(`no "listening" line within ${STARTUP_MS} ms`)),
    STARTUP_MS,
  );
  let buffered = '';
  server.stdout.on('data', (chunk) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      logs.push(line);
      try {
        const entry = JSON.parse(line);
        if (entry.msg === 'control plane listening') {
          clearTimeout(timer);
          resolve(entry.port);
        }
      } catch {
        // not a log line
      }
    }
  });
  server.stderr.on('data', (chunk) => logs.push(String(chunk)));
  server.on('exit', () => reject(new Error('the server exited before listening')));
}).catch(async (e) => {
  await stop();
  console.error(`smoke: ${e.message}\n${logs.slice(-20).join('\n')}`);
  process.exit(1);
});

const base = `http://127.0.0.1:${port}`;
const statuses = {};
const failures = [];
let requests = 0;

async function request(method, url, { token, body, contentType = 'application/json', headers = {} } = {}) {
  const h = { ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  if (body !== undefined) h['content-type'] = contentType;
  const res = await fetch(`${base}${url}`, { method, headers: h, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  requests++;
  statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  if (res.status >= 500)
    failures.push(`${method} ${url} ${body?.slice(0, 200) ?? ''} → ${res.status} ${text.slice(0, 300)}`);
  return { status: res.status, json: () => JSON.parse(text) };
}

/** A body from a schema: defaults, the first enum value, or a value of the type, for required fields. */
function sample(schema, components, depth = 0) {
  let s = schema ?? {};
  for (let i = 0; s.$ref && i < 16; i++) s = components[s.$ref.split('/').pop()] ?? {};
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  if (s.enum) return s.enum[0];
  if (s.anyOf ?? s.oneOf) return sample((s.anyOf ?? s.oneOf)[0], components, depth + 1);
  if (s.allOf) return Object.assign({}, ...s.allOf.map((x) => sample(x, components, depth + 1)));
  switch (s.type) {
    case 'string':
      return s.format === 'date-time' ? new Date(Date.now() + 3_600_000).toISOString() : 'smoke';
    case 'integer':
    case 'number':
      return Math.max(s.minimum ?? 1, 1);
    case 'boolean':
      return true;
    case 'array':
      return depth > 4 ? [] : [sample(s.items, components, depth + 1)];
    case 'object': {
      if (depth > 6) return {};
      const out = {};
      for (const k of s.required ?? []) out[k] = sample(s.properties?.[k], components, depth + 1);
      return out;
    }
    default:
      return {};
  }
}

try {
  const docRes = await request('GET', '/openapi.json');
  if (docRes.status !== 200) throw new Error(`GET /openapi.json → ${docRes.status}`);
  const doc = docRes.json();
  const components = doc.components?.schemas ?? {};

  // Something real to address: a run, a group, a subscription, an agent run, a key.
  // (analysis: the only kind the built app alone can run; a command run would be 422 no_placement)
  const cmd = { kind: 'analysis', subject: { config: { fn: 'echo', message: 'smoke' } } };
  const json = (v) => JSON.stringify(v);
  const run = (await request('POST', '/runs', { token: ADMIN_KEY, body: json(cmd) })).json();
  const group = (
    await request('POST', '/groups', {
      token: ADMIN_KEY,
      body: json({ kind: 'batch', spec: cmd, repeat: 1 }),
    })
  ).json();
  const sub = (
    await request('POST', '/subscriptions', {
      token: ADMIN_KEY,
      body: json({
        name: 'smoke',
        selector: { kind: 'run.settled', filter: { kind: 'command' } },
        runSpec: cmd,
      }),
    })
  ).json();
  const agent = (
    await request('POST', '/internal/agent-run-events', {
      token: INTERNAL_TOKEN,
      headers: { 'x-everdict-tenant': 'default' },
      body: json({ event: 'started', agent: { agentId: 'smoke' } }),
    })
  ).json();
  const key = (
    await request('POST', '/api-keys', { token: ADMIN_KEY, body: json({ role: 'member' }) })
  ).json();
  const idsFor = (p) =>
    p.startsWith('/runs')
      ? [run.run?.id, agent.id]
      : p.startsWith('/groups')
        ? [group.group?.id]
        : p.startsWith('/subscriptions')
          ? [sub.id]
          : p.startsWith('/api-keys')
            ? [key.id]
            : [];
  const salted = [
    '{"kind":"analysis","subject":{"config":{"x":"\\ud800"}}}',
    `{"kind":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    '{"kind":"command","envelope":{"capRuns":2147483648},"ttlSec":9007199254740991}',
  ];

  const operations = Object.entries(doc.paths).flatMap(([p, ops]) =>
    Object.entries(ops).map(([m, op]) => [p, m, op]),
  );
  // Destructive operations last, so every other one still finds what it addresses.
  operations.sort(
    (a, b) =>
      Number(a[1] === 'delete' || a[0].endsWith('/revoke')) -
      Number(b[1] === 'delete' || b[0].endsWith('/revoke')),
  );
  for (const [p, m, op] of operations) {
    const method = m.toUpperCase();
    const internal = (op.security ?? []).some((s) => 'internalToken' in s);
    const token = internal ? INTERNAL_TOKEN : p === '/metrics' ? METRICS_TOKEN : ADMIN_KEY;
    const headers = internal ? { 'x-everdict-tenant': 'default' } : {};
    const schema = op.requestBody?.content?.['application/json']?.schema;
    const bodies = schema ? [json(sample(schema, components)), '{}', ...salted] : [undefined];
    const urls = p.includes('{id}')
      ? [...idsFor(p).filter(Boolean), 'smoke_unknown_id'].map((id) =>
          p.replace('{id}', encodeURIComponent(id)),
        )
      : [p];
    for (const url of urls) {
      for (const body of bodies) {
        await request(method, url, { token, body, headers });
        await request(method, url, { body, headers }); // without credentials
      }
    }
  }
  await request('GET', '/metrics');
} catch (e) {
  failures.push(`smoke aborted: ${e.stack ?? e}`);
}

if (exited) failures.push(`the server exited during the smoke test: ${JSON.stringify(exited)}`);
await stop();
console.log(
  `SMOKE ${JSON.stringify({ main: path.relative(process.cwd(), main), requests, statuses, failures: failures.length })}`,
);
if (failures.length > 0) {
  console.error(failures.join('\n'));
  console.error(
    logs
      .filter((l) => /"level":(50|60)/.test(l))
      .slice(-10)
      .join('\n'),
  );
  process.exit(1);
}

async function stop() {
  if (!exited) {
    server.kill('SIGTERM');
    await new Promise((resolve) => {
      const timer = setTimeout(() => {
        server.kill('SIGKILL');
        resolve();
      }, 15_000);
      server.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  rmSync(dataDir, { recursive: true, force: true });
}
