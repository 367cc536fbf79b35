// The sandbox log when the pod log lags what commands wrote (as on any node: the keeper's `tail -f`, the
// runtime's log file, the kubelet): a read right after an exec still holds everything that exec printed,
// because it reads the log file itself; `follow` (pods/log) gets it all, later. Reads that the API server
// never answers, or that stop getting data, fail as PlacementError instead of hanging.
import { PlacementError } from '@everdict/placement';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openExec } from '../src/exec-channel.js';
import { ChildProcessRunner } from '../src/testing/index.js';
import { DriverFixture } from './fixture.js';

const labels = (runId: string) => ({ labels: { tenant: 'acme', runId, kind: 'command' } });

async function text(stream: AsyncIterable<Uint8Array>): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += Buffer.from(chunk).toString('utf8');
  return out;
}

describe('the sandbox log', () => {
  let f: DriverFixture;
  beforeAll(async () => {
    f = await DriverFixture.start({ runner: new ChildProcessRunner() });
  });
  afterAll(async () => {
    f.server.logLagMs = 0;
    f.server.stallRequests(undefined);
    await f?.close();
  });

  it('holds what an exec printed as soon as the exec returned, though the pod log lags', async () => {
    const d = await f.driver({ slots: 4 });
    const ns = d.config.capacityNamespaces[0] as string;
    const h = await d.provision(labels('lagging-log'));
    f.server.logLagMs = 60_000; // the pod log gets nothing of what follows within this test
    try {
      await d.exec(h, ['sh', '-c', 'echo alpha-line; echo alpha-err >&2']);
      await d.exec(h, ['echo', 'beta-line']);
      const log = await text(d.logs(h));
      expect(log).toContain('alpha-line\n');
      expect(log).toContain('alpha-err\n');
      expect(log.indexOf('beta-line\n')).toBeGreaterThan(log.indexOf('alpha-line\n'));
      // what the pod log (kubectl logs) shows at this moment: nothing yet
      const podLog = await f.core.readNamespacedPodLog({ name: h.id, namespace: ns, container: 'sandbox' });
      expect(podLog).not.toContain('alpha-line');
    } finally {
      f.server.logLagMs = 0;
    }
    await d.dispose(h);
    await d.close();
  });

  it('follows through the lagging pod log: every line arrives, once, and it ends at dispose', async () => {
    const d = await f.driver({ slots: 4 });
    const h = await d.provision(labels('lagging-follow'));
    f.server.logLagMs = 300;
    try {
      await d.exec(h, ['echo', 'gamma-line']);
      let seen = '';
      let sawDelta!: () => void;
      const delta = new Promise<void>((resolve) => {
        sawDelta = resolve;
      });
      const tail = (async () => {
        for await (const chunk of d.logs(h, { follow: true })) {
          seen += Buffer.from(chunk).toString('utf8');
          if (seen.includes('delta-line\n')) sawDelta();
        }
      })();
      await d.exec(h, ['echo', 'delta-line']);
      await delta;
      await d.dispose(h);
      await tail;
      expect(seen).toBe('gamma-line\ndelta-line\n');
    } finally {
      f.server.logLagMs = 0;
    }
    await d.close();
  });

  it('fails a read with spawn_failed when the exec upgrade is never answered', async () => {
    const d = await f.driver({ slots: 4, requestTimeoutMs: 2_000 });
    const h = await d.provision(labels('hung-log-exec'));
    f.server.stallRequests((r) => r.upgrade);
    try {
      const refused = text(d.logs(h));
      await expect(refused).rejects.toBeInstanceOf(PlacementError);
      await expect(refused).rejects.toMatchObject({ code: 'spawn_failed' });
    } finally {
      f.server.stallRequests(undefined);
    }
    await d.dispose(h);
    await d.close();
  });

  it('fails a read with spawn_failed when it gets no data for requestTimeoutMs', async () => {
    const d = await f.driver({ slots: 4, requestTimeoutMs: 2_500 });
    const h = await d.provision(labels('stalled-log-read'));
    await d.exec(h, ['echo', 'before']);
    // A FIFO in place of the log file: the read's `cat` blocks opening it, and no frame ever comes. Made
    // by a bare exec: a driver exec's wrapper opens the log itself (its `tee`s), which would race the swap.
    const swap = await openExec(
      f.kc,
      {
        namespace: d.config.capacityNamespaces[0] as string,
        pod: h.id,
        container: 'sandbox',
        command: () => ['sh', '-c', 'c=$EVERDICT_CONTROL_DIR; rm "$c/log" && mkfifo "$c/log"'],
        stdin: false,
        tty: false,
      },
      5000,
    );
    expect(await swap.status).toMatchObject({ status: 'Success' });
    await expect(text(d.logs(h))).rejects.toMatchObject({
      code: 'spawn_failed',
      message: expect.stringContaining('no data for 2500 ms'),
    });
    await d.dispose(h);
    await d.close();
  });

  it('fails a follow with spawn_failed when pods/log is never answered', async () => {
    const d = await f.driver({ slots: 4, requestTimeoutMs: 2_000 });
    const h = await d.provision(labels('hung-log-follow'));
    f.server.stallRequests((r) => r.path.endsWith(`/pods/${h.id}/log`));
    try {
      await expect(text(d.logs(h, { follow: true }))).rejects.toMatchObject({ code: 'spawn_failed' });
    } finally {
      f.server.stallRequests(undefined);
    }
    await d.dispose(h);
    await d.close();
  });
});
