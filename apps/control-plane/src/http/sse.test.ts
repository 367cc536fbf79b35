// GET /runs/:id/events: a JSON page, and SSE that replays, tails live, resumes, and ends on settle.
import { describe, expect, it } from 'vitest';
import { ADMIN_KEY, call, fakeApp } from './testing/harness.js';

async function readUntil(res: Response, done: (text: string) => boolean, ms = 3000): Promise<string> {
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

describe('run events', () => {
  it('a JSON page of the run facts', async () => {
    const { app } = fakeApp();
    const created = await call(app, 'POST', '/runs', { body: { kind: 'analysis', subject: { config: {} } } });
    const id = (created.body.run as { id: string }).id;
    const page = await call(app, 'GET', `/runs/${id}/events`);
    expect(page.status).toBe(200);
    expect((page.body.items as { kind: string }[]).map((e) => e.kind)).toEqual(['run.queued']);
  });

  it('SSE replays past facts, tails live ones, and ends when the run settles', async () => {
    const { app, services } = fakeApp();
    const created = await call(app, 'POST', '/runs', { body: { kind: 'analysis', subject: { config: {} } } });
    const id = (created.body.run as { id: string }).id;
    const res = await app.request(`/runs/${id}/events`, { headers: sse });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    setTimeout(() => services.emit('default', id, 'run.started', { runId: id }), 20);
    setTimeout(() => void call(app, 'POST', `/runs/${id}/cancel`), 60);
    const text = await readUntil(res, (t) => t.includes('event: end'));
    const kinds = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(kinds).toEqual(['run.queued', 'run.started', 'run.settled', 'end']);
    const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('resumes after Last-Event-ID, and a settled run replays then ends', async () => {
    const { app } = fakeApp();
    const created = await call(app, 'POST', '/runs', { body: { kind: 'analysis', subject: { config: {} } } });
    const id = (created.body.run as { id: string }).id;
    await call(app, 'POST', `/runs/${id}/cancel`);
    const all = await readUntil(await app.request(`/runs/${id}/events`, { headers: sse }), (t) =>
      t.includes('event: end'),
    );
    expect([...all.matchAll(/^event: (.+)$/gm)].map((m) => m[1])).toEqual([
      'run.queued',
      'run.settled',
      'end',
    ]);
    const firstId = /^id: (\d+)$/m.exec(all)?.[1] ?? '';
    const resumed = await readUntil(
      await app.request(`/runs/${id}/events`, { headers: { ...sse, 'last-event-id': firstId } }),
      (t) => t.includes('event: end'),
    );
    expect([...resumed.matchAll(/^event: (.+)$/gm)].map((m) => m[1])).toEqual(['run.settled', 'end']);
  });

  it('an unknown run is a 404 problem before any stream starts', async () => {
    const { app } = fakeApp();
    const res = await app.request('/runs/run_missing/events', { headers: sse });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('draining ends a live stream', async () => {
    const { app, lifecycle } = fakeApp({ heartbeatMs: 5000 });
    const created = await call(app, 'POST', '/runs', { body: { kind: 'analysis', subject: { config: {} } } });
    const id = (created.body.run as { id: string }).id;
    const res = await app.request(`/runs/${id}/events`, { headers: sse });
    setTimeout(() => void lifecycle.drain(10), 30);
    const started = Date.now();
    const reader = res.body!.getReader();
    while (!(await reader.read()).done) {
      /* drain */
    }
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
