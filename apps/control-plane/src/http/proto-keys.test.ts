// A key named `__proto__` is data like any other key of a JSON body (JSON.parse makes it an own property):
// every free-form JSON field the control plane accepts keeps it — stored, digested into the run record's
// identity, and returned — sent here as raw JSON text, on the real core (PGlite).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordIdentity } from '../ledger/records.js';
import { call, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(async () => {
  await t?.close();
});

const PROTO_JSON = '{"__proto__":{"x":1},"a":1}';

/** The own `__proto__` value of `o` (undefined when it has none): never read through the accessor. */
function ownProto(o: unknown): unknown {
  return Object.getOwnPropertyDescriptor(o, '__proto__')?.value;
}

/** JSON text of `v` with every object's keys sorted (jsonb keeps no key order); own keys only. */
function canon(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canon(Object.getOwnPropertyDescriptor(v, k)?.value)}`).join(',')}}`;
}

/** `o` at `path`, own properties only. */
function at(o: unknown, ...path: string[]): unknown {
  let here = o;
  for (const key of path) here = Object.getOwnPropertyDescriptor(here, key)?.value;
  return here;
}

type RunBody = {
  id: string;
  tenant: string;
  kind: string;
  subject: unknown;
  placement: unknown;
  attach: unknown;
  envelope?: unknown;
  record: { head: string; length: number };
};

describe('`__proto__` keys survive every JSON route', () => {
  it('POST /runs: an analysis config keeps the key; GET returns it; the record identity is of the value sent', async () => {
    const subjectText = `{"config":${PROTO_JSON}}`;
    const created = await call(t.app, 'POST', '/runs', {
      body: `{"kind":"analysis","subject":${subjectText}}`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = (created.body.run as { id: string }).id;
    const got = (await call(t.app, 'GET', `/runs/${id}`)).body as unknown as RunBody;
    const config = at(got.subject, 'config');
    expect(Object.hasOwn(config as object, '__proto__')).toBe(true);
    expect(ownProto(config)).toEqual({ x: 1 });
    expect(canon(got.subject)).toBe(canon(JSON.parse(subjectText)));
    // The record's genesis head binds the subject: the one the client sent, key and all.
    expect(got.record.length).toBe(0);
    const sent = recordIdentity({ ...got, subject: JSON.parse(subjectText) });
    expect(got.record.head).toBe(sent.genesisHead);
    const dropped = recordIdentity({ ...got, subject: { config: { a: 1 } } });
    expect(got.record.head).not.toBe(dropped.genesisHead);
  });

  it('POST /runs: the key is kept at any depth (in arrays, inside another `__proto__` value)', async () => {
    const nested = `{"deep":[${PROTO_JSON}],"__proto__":${PROTO_JSON}}`;
    const open = await call(t.app, 'POST', '/runs', {
      body: `{"kind":"analysis","subject":{"config":{"nested":${nested}}}}`,
    });
    expect(open.status, JSON.stringify(open.body)).toBe(201);
    const run = (await call(t.app, 'GET', `/runs/${(open.body.run as { id: string }).id}`)).body;
    expect(canon(at(run.subject, 'config', 'nested'))).toBe(canon(JSON.parse(nested)));
    expect(ownProto(at(run.subject, 'config', 'nested'))).toEqual(JSON.parse(PROTO_JSON));
    expect(Object.getPrototypeOf(at(run.subject, 'config', 'nested'))).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('POST /groups: each case keeps the key (in the group’s runs, as created and as read)', async () => {
    const r = await call(t.app, 'POST', '/groups', {
      body: `{"kind":"batch","spec":{"kind":"analysis","subject":{"config":{"fn":"echo"}}},"cases":[${PROTO_JSON}]}`,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const [run] = r.body.runs as RunBody[];
    expect(canon(at(run!.subject, 'config', 'case'))).toBe(canon(JSON.parse(PROTO_JSON)));
    const read = (await call(t.app, 'GET', `/runs/${run!.id}`)).body;
    expect(canon(at(read.subject, 'config', 'case'))).toBe(canon(JSON.parse(PROTO_JSON)));
  });

  it('POST /subscriptions: a selector filter on a `__proto__` field is kept, not widened to match everything', async () => {
    const r = await call(t.app, 'POST', '/subscriptions', {
      body: `{"name":"p","selector":{"kind":"run.settled","filter":{"__proto__":"x"}},"runSpec":{"kind":"analysis","subject":{"config":${PROTO_JSON}}}}`,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const id = r.body.id as string;
    const read = (await call(t.app, 'GET', `/subscriptions/${id}`)).body;
    const selector = read.selector as { filter: unknown };
    expect(JSON.stringify(selector.filter)).toBe('{"__proto__":"x"}');
    expect(canon(at(read.runSpec, 'subject', 'config'))).toBe(canon(JSON.parse(PROTO_JSON)));
  });
});
