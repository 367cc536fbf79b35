// What a hung cluster does that a failing one does not: a create that reached the apiserver but whose answer
// never came back (the pod exists; the client gave up), a watch stream that goes silent with its
// connection alive (no event, no bookmark, no end), and a node that accepts an exec and never answers it.
// Each against the test API server's fault hooks (no real cluster here): `holdResponses`, `stallWatches`,
// `stallRequests`, `stallExecs`. The server answers in this process: on a starved machine an ordinary
// request, watch line or exec may come seconds late, so only what a test hangs gets a short deadline
// (`requestTimeoutFor`, a second driver for the hung exec) and every other bound is generous.
import { PlacementError, sandboxId } from '@everdict/placement';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ApiRequest, PodWatch } from '../src/index.js';
import { ChildProcessRunner } from '../src/testing/index.js';
import { CALM_REQUEST_TIMEOUT_MS, DriverFixture } from './fixture.js';

const labels = (runId: string) => ({ labels: { tenant: 'acme', runId, kind: 'command' } });
/** Wait for a condition; a generous bound turns a hang (the defect) into a clear failure. */
async function until(condition: () => boolean, boundMs = 120_000): Promise<void> {
  const end = Date.now() + boundMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`the condition did not hold within ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
/** A promise's outcome, or a failure if it is still pending after a generous bound (a hang). */
function bounded<T>(promise: Promise<T>, boundMs = 120_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still pending after ${boundMs} ms`)), boundMs);
  });
  return Promise.race([promise, hung]).finally(() => clearTimeout(timer));
}

type Match = (request: { method: string; path: string }) => boolean;
/** A watch silent for this long is cut: a starved loop can hold back a 200 ms bookmark for seconds. */
const WATCH_IDLE_MS = 5_000;

describe('the driver when the cluster hangs', () => {
  let f: DriverFixture;
  /** The requests the server now holds unanswered: only they get a test's short deadline. */
  let hanging: Match[] = [];
  const deadlines = (shortMs: number) => ({
    requestTimeoutMs: CALM_REQUEST_TIMEOUT_MS,
    requestTimeoutFor: (r: ApiRequest) =>
      hanging.some((m) => m({ method: r.method, path: r.url.pathname })) ? shortMs : undefined,
  });
  const holdResponses = (match: Match) => {
    hanging.push(match);
    f.server.holdResponses(match);
  };
  const stallRequests = (match: Match) => {
    hanging.push(match);
    f.server.stallRequests(match);
  };
  const heal = () => {
    hanging = [];
    f.server.holdResponses(undefined);
    f.server.stallRequests(undefined);
  };
  beforeAll(async () => {
    f = await DriverFixture.start({ runner: new ChildProcessRunner() });
  });
  afterEach(() => {
    heal();
    f.server.stallExecs(undefined);
  });
  afterAll(async () => {
    await f?.close();
  });

  const watchRequests = (ns: string) =>
    f.server.requests.filter(
      (r) => r.path === `/api/v1/namespaces/${ns}/pods` && r.query.includes('watch=true'),
    );

  it('deletes the pod a create made when the answer to the create never came', async () => {
    const d = await f.driver({ slots: 4, ...deadlines(2_000) });
    const ns = d.config.capacityNamespaces[0] as string;
    await d.podsIn(ns);
    const id = sandboxId('everdict', labels('unanswered').labels);
    holdResponses((r) => r.method === 'POST' && r.path === `/api/v1/namespaces/${ns}/pods`);
    // only the held create has the short deadline (`requestTimeoutFor`); with the calm one it would still pend
    const refused = await bounded(d.provision(labels('unanswered')), 60_000).then(
      () => undefined,
      (error: unknown) => error,
    );
    heal();
    expect(refused).toBeInstanceOf(PlacementError);
    expect(refused).toMatchObject({ code: 'spawn_failed' });
    // the create was carried out (the pod was made); the driver deleted it (grace 0) before it answered
    expect(f.server.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/pods'))).not.toEqual([]);
    expect(f.server.getObject('v1', 'pods', ns, id)).toBeUndefined();
    expect(refused).toMatchObject({ detail: { uncertain: true, cleanup: 'deleted', pod: id } });
    // a retry provisions normally
    const h = await d.provision(labels('unanswered'));
    expect((await d.exec(h, ['true'])).exitCode).toBe(0);
    await d.dispose(h);
    await d.close();
  });

  it('does not adopt on retry the pod it deleted after an unanswered create while the watch still shows it', async () => {
    // the watch stays silent past the create's timeout (4 s) and the clean-up: cut only after 20 s; the
    // retry waits (up to forceDeleteAfterMs) for the watch to show the abandoned pod gone
    const d = await f.driver({
      slots: 4,
      ...deadlines(4_000),
      watchIdleTimeoutMs: 20_000,
      forceDeleteAfterMs: 90_000,
    });
    const ns = d.config.capacityNamespaces[0] as string;
    const watch = await d.podsIn(ns);
    const id = sandboxId('everdict', labels('abandoned').labels);
    holdResponses((r) => r.method === 'POST' && r.path === `/api/v1/namespaces/${ns}/pods`);
    const refused = d.provision(labels('abandoned'));
    refused.catch(() => undefined);
    // the create is carried out and the watch shows the pod running; then the watch goes silent, so the
    // driver's clean-up delete (after the create's timeout) is not shown to its cache
    await until(() => watch.get(id)?.status?.phase === 'Running');
    const abandoned = watch.get(id)?.metadata?.uid;
    f.server.stallWatches();
    await expect(refused).rejects.toMatchObject({ detail: { cleanup: 'deleted' } });
    heal();
    expect(watch.get(id)?.metadata?.uid).toBe(abandoned); // the cache still shows the deleted pod
    const h = await d.provision(labels('abandoned')); // waits the abandoned pod out, then makes a new one
    expect(f.server.getObject('v1', 'pods', ns, id)?.metadata.uid).not.toBe(abandoned);
    expect((await d.exec(h, ['true'])).exitCode).toBe(0);
    await d.dispose(h);
    await d.close();
  });

  it('reaps the orphan of an unanswered create whose clean-up delete got no answer either (same instance)', async () => {
    const d = await f.driver({ slots: 4, ...deadlines(2_000) });
    const ns = d.config.capacityNamespaces[0] as string;
    const watch = await d.podsIn(ns);
    const id = sandboxId('everdict', labels('orphan').labels);
    holdResponses((r) => r.method === 'POST' && r.path === `/api/v1/namespaces/${ns}/pods`);
    stallRequests((r) => r.method === 'DELETE' && r.path.endsWith(`/pods/${id}`));
    await expect(d.provision(labels('orphan'))).rejects.toMatchObject({
      code: 'spawn_failed',
      detail: { uncertain: true, cleanup: 'left_for_reap' },
    });
    heal();
    await watch.waitFor(id, (p) => p?.status?.phase === 'Running', 120_000); // the orphan runs, holding quota
    // this instance's lease is live, but it neither holds nor provisions that pod: the sweep removes it
    const reaped = await d.reap({ labels: { tenant: 'acme' } });
    expect(reaped.map((r) => r.id)).toEqual([id]);
    expect(f.server.getObject('v1', 'pods', ns, id)).toBeUndefined();
    // what the instance holds is still never reaped
    const h = await d.provision(labels('held'));
    expect(await d.reap({ labels: { tenant: 'acme' } })).toEqual([]);
    await d.dispose(h);
    await d.close();
  });

  it('cuts a watch that goes silent and resumes it from the last resourceVersion; provision sees Running', async () => {
    const d = await f.driver({
      slots: 4,
      requestTimeoutMs: CALM_REQUEST_TIMEOUT_MS,
      watchIdleTimeoutMs: WATCH_IDLE_MS,
    });
    const ns = d.config.capacityNamespaces[0] as string;
    const watch = await d.podsIn(ns);
    await until(() => watch.stats.bookmarks > 0); // the stream is up (bookmarks every 200 ms)
    const sent = watchRequests(ns).length;
    const seen = watch.version;
    f.server.stallWatches(); // TCP alive, nothing more: no events, no bookmarks, no end
    const h = await d.provision(labels('silent')); // waits on the watch for Running
    expect(watch.stats.idle).toBeGreaterThanOrEqual(1);
    expect(watch.stats.lists).toBe(1); // resumed, not re-listed
    const resumed = new URLSearchParams(watchRequests(ns)[sent]?.query);
    expect(resumed.get('resourceVersion')).toBe(seen);
    expect(Number(resumed.get('timeoutSeconds'))).toBeGreaterThanOrEqual(300);
    await d.dispose(h);
    await d.close();
  });

  it('re-lists when the silent watch resumes from a compacted resourceVersion (410)', async () => {
    const d = await f.driver({
      slots: 4,
      requestTimeoutMs: CALM_REQUEST_TIMEOUT_MS,
      watchIdleTimeoutMs: WATCH_IDLE_MS,
    });
    const ns = d.config.capacityNamespaces[0] as string;
    const watch = await d.podsIn(ns);
    await until(() => watch.stats.bookmarks > 0);
    f.server.stallWatches();
    // the store moves on (the silent stream brings no bookmark of it), then compacts past the version seen
    await f.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'bump' } } });
    f.server.compact();
    const h = await d.provision(labels('silent-expired'));
    expect(watch.stats.idle).toBeGreaterThanOrEqual(1);
    expect(watch.stats.expired).toBeGreaterThanOrEqual(1);
    expect(watch.stats.lists).toBeGreaterThanOrEqual(2);
    await d.dispose(h);
    await d.close();
  });

  it('cuts a watch request whose response never starts, and resumes once the apiserver answers', async () => {
    const ns = await f.namespace();
    const watch = new PodWatch(f.kc, f.core, ns, 100, undefined, { idleTimeoutMs: WATCH_IDLE_MS });
    await watch.synced();
    await until(() => watch.stats.bookmarks > 0);
    f.server.stallRequests(
      (r) => r.path === `/api/v1/namespaces/${ns}/pods` && r.query.includes('watch=true'),
    );
    const sent = watchRequests(ns).length;
    f.server.endWatches(); // the resumed request is read and never answered (no headers)
    await until(() => watchRequests(ns).length >= sent + 2); // cut for silence, and sent again
    f.server.stallRequests(undefined);
    const bookmarks = watch.stats.bookmarks;
    await until(() => watch.stats.bookmarks > bookmarks); // a request answered: the stream is back
    expect(watch.stats.idle).toBeGreaterThanOrEqual(1);
    watch.close();
  });

  it('fails an internal exec the node never answers with spawn_failed (internal_exec_timeout)', async () => {
    // the driver's own execs share one deadline: only the hung snapshot is taken by a driver whose
    // deadline is short, the ordinary one after it by a driver of the same namespace with the default
    const d = await f.driver({ slots: 4, requestTimeoutMs: CALM_REQUEST_TIMEOUT_MS });
    const ns = d.config.capacityNamespaces[0] as string;
    const hasty = await f.driver({
      namespace: ns,
      requestTimeoutMs: CALM_REQUEST_TIMEOUT_MS,
      internalExecTimeoutMs: 3_000,
    });
    const h = await d.provision(labels('hung-internal-exec'));
    await d.exec(h, ['sh', '-c', 'echo kept > kept.txt']);
    f.server.stallExecs((r) => r.upgrade && r.path.endsWith(`/pods/${h.id}/exec`));
    const hung = hasty.snapshot(h); // the upgrade is accepted (101), then no frame and no status ever come
    await expect(bounded(hung)).rejects.toMatchObject({
      code: 'spawn_failed',
      detail: { reason: 'internal_exec_timeout', timeoutMs: 3_000 },
    });
    f.server.stallExecs(undefined);
    const snapshot = await d.snapshot(h);
    expect(snapshot.bytes.byteLength).toBeGreaterThan(0);
    await d.dispose(h);
    await hasty.close();
    await d.close();
  });
});
