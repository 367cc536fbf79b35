// The client against a real control plane (the built server, embedded PGlite): the document its types were
// generated from is the one the server serves, typed calls round-trip, refusals arrive as ClientError.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientError, createClient, dataOf } from '../src/index.js';
import { type ControlPlaneProcess, startControlPlane } from '../src/testing.js';

let cp: ControlPlaneProcess;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
});

describe('@everdict/client against the live control plane', () => {
  it('was generated from exactly the document GET /openapi.json serves', async () => {
    const live = await (await fetch(`${cp.url}/openapi.json`)).json();
    const generated = JSON.parse(
      readFileSync(new URL('../generated/openapi.json', import.meta.url), 'utf8'),
    ) as unknown;
    expect(live).toEqual(generated);
  });

  it('round-trips typed calls with the admin key', async () => {
    const client = createClient({ baseUrl: cp.url, token: cp.apiKey });
    const page = dataOf(await client.GET('/runs', { params: { query: {} } }));
    expect(page.items).toEqual([]);
    expect(page.nextCursor).toBeNull();
    const health = dataOf(await client.GET('/healthz', {}));
    expect(health).toMatchObject({ status: 'ok', database: 'pglite' });
  });

  it('turns a refusal into a ClientError with the problem code and status', async () => {
    const anonymous = createClient({ baseUrl: cp.url });
    const err = await anonymous.GET('/runs', {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ClientError);
    expect(err).toMatchObject({ status: 401 });
    expect((err as ClientError).code).toMatch(/^[a-z_]+$/);

    const client = createClient({ baseUrl: cp.url, token: cp.apiKey });
    const bad = await client.POST('/runs', { body: { kind: 42 } as never }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(bad).toMatchObject({ code: 'validation_failed', status: 400 });
    expect((bad as ClientError).problem?.issues?.length).toBeGreaterThan(0);

    const missing = await client.GET('/runs/{id}', { params: { path: { id: 'no-such-run' } } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(missing).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('is a `network` ClientError when nothing answers', async () => {
    const client = createClient({ baseUrl: 'http://127.0.0.1:1' });
    const err = await client.GET('/runs', {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'network', status: 0 });
  });
});
