// GET /runs/:id/trajectory/stream ends, and its closing `end` event says why. A run that ended without
// recording an event has no trajectory to seal (`run.trajectory` stays absent): the tail ends on the run's end
// — opened before or after it — not following an empty trajectory for ever, with `ended` and the run's status,
// never `sealed`. A run that ended with events sends them all and ends at the seal (`sealed`). The route's
// OpenAPI description says the same.
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

const stream = async (runId: string) => {
  const res = await t.app.request(`/runs/${runId}/trajectory/stream`, {
    headers: { authorization: `Bearer ${await t.key('admin')}`, accept: 'text/event-stream' },
  });
  expect(res.status).toBe(200);
  return res;
};

/** The SSE messages until the stream closes, or null if it is still open when `signal` aborts. */
async function untilClosed(
  res: Response,
  signal: AbortSignal,
): Promise<{ event: string; data: string }[] | null> {
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
  it('a run that ended without an event: the tail ends (opened before and after its end) with `ended`, never `sealed`', async () => {
    const runId = await newRun();
    const reading = untilClosed(await stream(runId), AbortSignal.timeout(20_000));
    await call(t.app, 'POST', `/runs/${runId}/cancel`);
    await t.core.trajectoryJobs!.sealDue();
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.trajectory).toBeUndefined();
    const before = await reading;
    expect(before?.map((m) => m.event)).toEqual(['end']);
    expect(endOf(before)).toEqual({ runId, status: 'ended', runStatus: 'cancelled' });
    const after = await untilClosed(await stream(runId), AbortSignal.timeout(20_000));
    expect(after?.map((m) => m.event)).toEqual(['end']);
    expect(endOf(after)).toEqual({ runId, status: 'ended', runStatus: 'cancelled' });
  });

  it('a run that ended with events: every one, then `sealed` at the seal', async () => {
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
    const reading = untilClosed(await stream(runId), AbortSignal.timeout(20_000));
    await t.core.trajectoryJobs!.sealDue();
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.trajectory).toBeDefined();
    const messages = await reading;
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
