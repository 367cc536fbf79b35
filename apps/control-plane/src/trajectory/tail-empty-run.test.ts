// The SSE tail of a run that ended without recording an event: its trajectory is never sealed (there is
// nothing to seal, `run.trajectory` stays absent), so the tail must end on the run's end — not follow an
// empty trajectory for ever. A run that ended with events still ends its tail at the seal, every event sent.
import type { TraceEvent } from '@everdict/run-model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp, testApp } from '../http/testing/harness.js';

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

const stream = async (runId: string) =>
  t.app.request(`/runs/${runId}/trajectory/stream`, {
    headers: { authorization: `Bearer ${await t.key('admin')}`, accept: 'text/event-stream' },
  });

describe('the trajectory tail of a run that ended', { timeout: 120_000 }, () => {
  it('ends for a run that ended without an event (opened before and after its end)', async () => {
    const runId = await newRun();
    const before = await stream(runId);
    expect(before.status).toBe(200);
    const reading = untilClosed(before, AbortSignal.timeout(20_000));
    await call(t.app, 'POST', `/runs/${runId}/cancel`);
    await t.core.trajectoryJobs!.sealDue();
    expect((await call(t.app, 'GET', `/runs/${runId}`)).body.trajectory).toBeUndefined();
    const got = await reading;
    expect(got, 'the tail was still open 20 s after the run ended').not.toBeNull();
    expect(got!.map((m) => m.event)).toEqual(['end']);

    const after = await untilClosed(await stream(runId), AbortSignal.timeout(20_000));
    expect(after?.map((m) => m.event)).toEqual(['end']);
  });

  it('a run that ended with events still sends them all and ends at the seal', async () => {
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
    const got = await reading;
    expect(got?.filter((m) => m.event === 'trajectory.event')).toHaveLength(2);
    expect(got?.at(-1)?.event).toBe('end');
  });
});
