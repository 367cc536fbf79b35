// `run --follow`'s trajectory tail against a REAL control plane (the built apps/control-plane on embedded
// PGlite): the trajectory stream ends after a page of events (`end` `{status: "limit"}`, "resume with
// Last-Event-ID", after 10,000 by default); the tail goes on with the next page instead of going quiet while the run still runs.
import { PassThrough } from 'node:stream';
import type { ControlPlaneProcess } from '@everdict/client/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followTrajectory, TRAJECTORY_PAGE } from '../src/commands/watch.js';
import { makeContext } from '../src/context.js';
import { Sink } from './capture.js';
import { fileControlPlane } from './control-plane.js';

let cp: ControlPlaneProcess;
const controlPlane = fileControlPlane();

beforeAll(async () => {
  cp = await controlPlane.start();
}, 300_000);
afterAll(() => controlPlane.stop());

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${cp.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${cp.apiKey}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  expect(res.status, `${method} ${path} answered ${res.status}: ${text}`).toBeLessThan(300);
  return JSON.parse(text) as T;
}

/** Exports spans `step-<from+1>` … `step-<from+count>` into the run's trajectory through OTLP/HTTP JSON. */
async function exportSpans(runId: string, from: number, count: number): Promise<void> {
  const now = BigInt(Date.now()) * 1_000_000n;
  const spans = Array.from({ length: count }, (_, j) => from + j).map((i) => ({
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: `b7ad6b7169${String(i + 1).padStart(6, '0')}`,
    name: `step-${i + 1}`,
    kind: 1,
    startTimeUnixNano: String(now + BigInt(i) * 1_000_000n),
    endTimeUnixNano: String(now + BigInt(i + 1) * 1_000_000n),
    attributes: [],
    status: {},
  }));
  await api('POST', '/v1/traces', {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'everdict.run_id', value: { stringValue: runId } }] },
        scopeSpans: [{ scope: { name: 'follow-pages' }, spans }],
      },
    ],
  });
}

describe('the trajectory tail', () => {
  it('follows the stream past its page limit (10,000 events): every event once, in order', async () => {
    // A run that stays live however slow this machine is: a sandbox session, open until it is closed (or
    // its 600 s idle timeout, past this test's). An analysis `sleep` lived at most the inline lane's 30 s
    // timeout: under load it had ended before this test did, and the closing cancel answered 409. (An agent
    // turn will not do: its host's transcript is its trajectory, OTLP spans for it are imported apart.)
    const opened = await api<{ run: { id: string } }>('POST', '/sandboxes', {
      image: 'default',
      ttlSec: 600,
      idleTimeoutSec: 600,
    });
    const runId = opened.run.id;
    // One page and a bit, in bodies under the 1 MiB limit.
    const total = TRAJECTORY_PAGE + 5;
    for (let from = 0; from < total; from += 2_000)
      await exportSpans(runId, from, Math.min(2_000, total - from));
    const stdout = new Sink();
    const ctx = makeContext(
      { url: cp.url, key: cp.apiKey },
      { stdout, stderr: new Sink(), stdin: new PassThrough(), env: {} },
    );
    const stop = new AbortController();
    let ended = false;
    const tail = followTrajectory(ctx, runId, stop.signal).finally(() => {
      ended = true;
    });
    const steps = () => stdout.text.match(/step-\d+/g) ?? [];
    const deadline = Date.now() + 90_000;
    while (!ended && steps().length < total && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const stillTailing = !ended; // a live run's tail ends only when its caller stops it
    stop.abort();
    const n = await tail;
    expect(stillTailing).toBe(true);
    expect(n).toBe(total);
    expect(steps()).toEqual(Array.from({ length: total }, (_, i) => `step-${i + 1}`));
    await api('POST', `/sandboxes/${runId}/close`, {});
  });
});
