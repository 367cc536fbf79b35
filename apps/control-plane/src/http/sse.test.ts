// GET /runs/:id/events on the real core: a JSON page, and SSE that replays, tails live, resumes, and ends on
// settle. The live facts come from the agent bridge (its reports are the run's transitions).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, INTERNAL_TOKEN, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await testApp({ heartbeatMs: 50 });
}, 300_000); // a PGlite template is made per file: minutes on a loaded 2-core machine
afterAll(async () => {
  await t?.close();
});

async function readUntil(res: Response, done: (text: string) => boolean, ms = 10_000): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const deadline = Date.now() + ms;
  while (!done(text) && Date.now() < deadline) {
    const next = await Promise.race([
      reader.read(),
      new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now())),
    ]);
    if (next === null || next.done) break;
    text += decoder.decode(next.value, { stream: true });
  }
  await reader.cancel();
  return text;
}

const sse = { authorization: `Bearer ${ADMIN_KEY}`, accept: 'text/event-stream' };
const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };
const kinds = (text: string) => [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
const report = (body: Record<string, unknown>) =>
  call(t.app, 'POST', '/internal/agent-run-events', {
    key: INTERNAL_TOKEN,
    headers: { 'x-everdict-tenant': 'default' },
    body,
  });

describe('run events', () => {
  it('a JSON page of the run facts', async () => {
    const created = await call(t.app, 'POST', '/runs', { body: cmd });
    const id = (created.body.run as { id: string }).id;
    const page = await call(t.app, 'GET', `/runs/${id}/events`);
    expect(page.status).toBe(200);
    expect((page.body.items as { kind: string }[]).map((e) => e.kind)).toEqual(['run.queued']);
  });

  it('SSE replays past facts, tails live ones, and ends when the run settles', async () => {
    const started = await report({ event: 'started', agent: { agentId: 'sse' } });
    const id = String(started.body.id);
    const res = await t.app.request(`/runs/${id}/events`, { headers: sse });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const text = readUntil(res, (s) => s.includes('event: end'));
    await new Promise((r) => setTimeout(r, 50));
    expect((await report({ runId: id, event: 'awaiting_input', transcript: 'ab'.repeat(32) })).status).toBe(
      200,
    );
    expect((await report({ runId: id, event: 'resumed', transcript: 'ab'.repeat(32) })).status).toBe(200);
    expect((await report({ runId: id, event: 'succeeded' })).status).toBe(200);
    const all = await text;
    expect(kinds(all)).toEqual([
      'run.queued',
      'run.started',
      'run.awaiting_input',
      'run.resumed',
      'run.settled',
      'end',
    ]);
    const ids = [...all.matchAll(/^id: (\d+)$/gm)].map((m) => BigInt(m[1]!));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });

  it('resumes after Last-Event-ID, and a settled run replays then ends', async () => {
    const created = await call(t.app, 'POST', '/runs', { body: cmd });
    const id = (created.body.run as { id: string }).id;
    await call(t.app, 'POST', `/runs/${id}/cancel`);
    const all = await readUntil(await t.app.request(`/runs/${id}/events`, { headers: sse }), (s) =>
      s.includes('event: end'),
    );
    expect(kinds(all)).toEqual(['run.queued', 'run.settled', 'end']);
    const firstId = /^id: (\d+)$/m.exec(all)?.[1] ?? '';
    const resumed = await readUntil(
      await t.app.request(`/runs/${id}/events`, { headers: { ...sse, 'last-event-id': firstId } }),
      (s) => s.includes('event: end'),
    );
    expect(kinds(resumed)).toEqual(['run.settled', 'end']);
  });

  it('an unknown run is a 404 problem before any stream starts', async () => {
    const res = await t.app.request('/runs/run_missing/events', { headers: sse });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('draining ends a live stream', async () => {
    const { buildApp } = await import('../app.js');
    const { Lifecycle } = await import('./lifecycle.js');
    const lifecycle = new Lifecycle();
    const { app } = buildApp({
      services: t.core.services,
      health: () => t.core.health(),
      lifecycle,
      heartbeatMs: 5000,
    });
    const created = await call(app, 'POST', '/runs', { body: cmd });
    const id = (created.body.run as { id: string }).id;
    const res = await app.request(`/runs/${id}/events`, { headers: sse });
    setTimeout(() => void lifecycle.drain(10), 30);
    const reader = res.body!.getReader();
    while (!(await reader.read()).done) {
      /* drain */
    }
    expect(lifecycle.draining).toBe(true);
  });
});
