// The closing `end` event of GET /runs/:id/trajectory/stream says why the stream ended: `sealed` only when a
// trajectory was sealed, `ended` (with the run's status) for a run that ended without an event — nothing was
// sealed then. The route's OpenAPI description says the same.
import type { TraceEvent } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from './testing/harness.js';

let t: TestApp;

beforeAll(async () => {
  t = await testApp();
}, 300_000);
afterAll(() => t.close(), 60_000);

const cmd = { kind: 'command', subject: { path: 'x', image: 'alpine:3.20', command: ['true'] } };

async function newRun(): Promise<string> {
  const r = await call(t.app, 'POST', '/runs', { body: cmd });
  expect(r.status).toBe(201);
  return (r.body.run as { id: string }).id;
}

/** The SSE messages of a stream until it closes (the signal bounds the wait; null if still open then). */
async function untilClosed(
  runId: string,
  signal: AbortSignal,
): Promise<{ event: string; data: string }[] | null> {
  const res = await t.app.request(`/runs/${runId}/trajectory/stream`, {
    headers: { authorization: `Bearer ${await t.key('admin')}`, accept: 'text/event-stream' },
  });
  expect(res.status).toBe(200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', stop, { once: true });
  let text = '';
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
    if (done) break;
    text += value;
  }
  signal.removeEventListener('abort', stop);
  if (signal.aborted) return null;
  return text
    .split('\n\n')
    .map((block) => ({
      event: /^event: ?(.*)$/m.exec(block)?.[1] ?? '',
      data: /^data: ?(.*)$/m.exec(block)?.[1] ?? '',
    }))
    .filter((m) => m.event);
}

const endOf = (messages: { event: string; data: string }[] | null) => {
  expect(messages, 'the stream was still open').not.toBeNull();
  const last = messages!.at(-1)!;
  expect(last.event).toBe('end');
  return JSON.parse(last.data) as Record<string, unknown>;
};

describe('the trajectory stream’s closing event', { timeout: 120_000 }, () => {
  it('a run that ended without an event: `ended` with the run’s status, never `sealed`', async () => {
    const runId = await newRun();
    await call(t.app, 'POST', `/runs/${runId}/cancel`);
    await t.core.trajectoryJobs!.sealDue();
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.trajectory).toBeUndefined();
    const messages = await untilClosed(runId, AbortSignal.timeout(20_000));
    expect(messages?.map((m) => m.event)).toEqual(['end']);
    expect(endOf(messages)).toEqual({ runId, status: 'ended', runStatus: 'cancelled' });
  });

  it('a run whose trajectory was sealed: `sealed`, after every event', async () => {
    const runId = await newRun();
    const ts = '2026-12-01T10:00:00.000Z';
    const events: TraceEvent[] = [1, 2].map((seq) => ({
      type: 'log',
      seq,
      ts,
      runId,
      level: 'info',
      message: `l${seq}`,
    }));
    await t.core.trajectories!.append('default', runId, events);
    await call(t.app, 'POST', `/runs/${runId}/cancel`);
    await t.core.trajectoryJobs!.sealDue();
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.trajectory).toBeDefined();
    const messages = await untilClosed(runId, AbortSignal.timeout(20_000));
    expect(messages?.filter((m) => m.event === 'trajectory.event')).toHaveLength(2);
    expect(endOf(messages)).toEqual({ runId, status: 'sealed', runStatus: 'cancelled' });
  });

  it('the route’s OpenAPI description names each closing status', async () => {
    const doc = (await call(t.app, 'GET', '/openapi.json')).body as {
      paths: Record<string, { get?: { description?: string } }>;
    };
    const description = doc.paths['/runs/{id}/trajectory/stream']?.get?.description ?? '';
    for (const status of ['sealed', 'ended', 'limit']) expect(description).toContain(`status: "${status}"`);
    expect(description).toContain('nothing was sealed');
  });
});
