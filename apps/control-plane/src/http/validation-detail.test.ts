// Every schema refusal of a request part — query, path parameter, header, body — names the offending field,
// where it is and why, by one mapping (problem.ts `validationProblem`), on the real core; the stable codes
// (`validation_failed`, `out_of_range`) are unchanged. The OpenAPI document says so for every route that
// validates input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProblemSchema } from './problem.js';
import { call, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp();
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

interface Refusal {
  code: string;
  detail: string;
  issues: { code: string; path: (string | number)[]; message: string; in?: string }[];
}

async function refused(
  method: string,
  path: string,
  code: 'validation_failed' | 'out_of_range',
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Refusal> {
  const r = await call(t.app, method, path, opts);
  const where = JSON.stringify(r.body);
  expect(r.status, where).toBe(400);
  expect(r.type).toBe('application/problem+json');
  expect(r.body, where).toMatchObject({ code, type: `urn:everdict:problem:${code}` });
  expect(ProblemSchema.safeParse(r.body).success, where).toBe(true);
  return r.body as unknown as Refusal;
}

describe('a refused request part names the field and why', () => {
  it('a limit that is not a number: the query parameter `limit`, expected a number', async () => {
    const p = await refused('GET', '/runs?limit=abc', 'validation_failed');
    expect(p.detail).toMatch(/^query parameter "limit": .*expected number/);
    expect(p.issues).toEqual([expect.objectContaining({ path: ['limit'], in: 'query' })]);
  });

  it('a limit out of bounds: out_of_range, naming `limit` and its bound', async () => {
    const p = await refused('GET', '/runs?limit=0', 'out_of_range');
    expect(p.detail).toMatch(/^query parameter "limit": .*>=1/);
    expect(p.issues).toEqual([expect.objectContaining({ code: 'too_small', path: ['limit'], in: 'query' })]);
  });

  it('an unknown status filter: the query parameter `status`, with the statuses it may be', async () => {
    const p = await refused('GET', '/runs?status=nope', 'validation_failed');
    expect(p.detail).toMatch(/^query parameter "status": .*"queued"/);
    expect(p.issues).toEqual([expect.objectContaining({ path: ['status'], in: 'query' })]);
  });

  it('several bad parameters: the detail names the first and counts the rest; issues lists each', async () => {
    const p = await refused('GET', '/runs?limit=0&status=nope', 'validation_failed');
    expect(p.detail).toMatch(/^query parameter "(status|limit)": .*\(and 1 more: see issues\)$/);
    expect(p.issues.map((i) => [i.path[0], i.in]).sort()).toEqual([
      ['limit', 'query'],
      ['status', 'query'],
    ]);
  });

  it('a path parameter too long: the path parameter `id`', async () => {
    const p = await refused('GET', `/runs/${'x'.repeat(201)}`, 'validation_failed');
    expect(p.detail).toMatch(/^path parameter "id": .*<=200 characters/);
    expect(p.issues).toEqual([expect.objectContaining({ path: ['id'], in: 'path' })]);
  });

  it('a malformed header: the header by name', async () => {
    const p = await refused('GET', '/runs/x/events', 'validation_failed', {
      headers: { 'last-event-id': 'zz' },
    });
    expect(p.detail).toMatch(/^header "last-event-id": /);
    expect(p.issues).toEqual([expect.objectContaining({ path: ['last-event-id'], in: 'header' })]);
  });

  it('a body the schema refuses: the body field, by its path', async () => {
    const p = await refused('POST', '/runs', 'validation_failed', {
      body: { kind: 'command', lifetime: 'x' },
    });
    expect(p.detail).toMatch(/^body field "lifetime": .*"task"/);
    expect(p.issues).toContainEqual(expect.objectContaining({ path: ['lifetime'], in: 'body' }));
  });
});

describe('the OpenAPI document', () => {
  interface Doc {
    paths: Record<
      string,
      Record<
        string,
        {
          parameters?: unknown[];
          requestBody?: unknown;
          responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
        }
      >
    >;
    components: { schemas: Record<string, { properties: Record<string, unknown> }> };
  }

  it('documents the 400 problem on every route that validates its request, and its issue shape', async () => {
    const r = await call(t.app, 'GET', '/openapi.json', { key: null });
    expect(r.status).toBe(200);
    const doc = r.body as unknown as Doc;
    const undocumented: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops)) {
        if ((op.parameters ?? []).length === 0 && op.requestBody === undefined) continue;
        const schema = op.responses['400']?.content?.['application/problem+json']?.schema;
        if (schema?.$ref !== '#/components/schemas/Problem') undocumented.push(`${method} ${path}`);
      }
    expect(undocumented).toEqual([]);
    expect(Object.keys(doc.components.schemas.ValidationIssue?.properties ?? {})).toEqual(
      expect.arrayContaining(['code', 'path', 'message', 'in']),
    );
    expect(Object.keys(doc.components.schemas.Problem?.properties ?? {})).toEqual(
      expect.arrayContaining(['detail', 'issues', 'details']),
    );
  });
});
