// One namespace's everdict pods, kept current by a watch (never by polling): list once for a
// resourceVersion, then watch from it with bookmarks; a stream that ends is resumed from the last version
// seen (an event's or a bookmark's); a 410 Expired (the version was compacted away) re-lists and starts
// over. Waiters are woken by the events themselves.
import { type CoreV1Api, type KubeConfig, type V1Pod, Watch } from '@kubernetes/client-node';

export const MANAGED_BY = 'app.kubernetes.io/managed-by=everdict';

type Waiter = {
  name: string;
  test: (pod: V1Pod | undefined) => boolean;
  resolve: (pod: V1Pod | undefined) => void;
};

export interface PodWatchStats {
  lists: number;
  watches: number;
  expired: number;
  bookmarks: number;
  events: number;
}

export class PodWatch {
  private readonly pods = new Map<string, V1Pod>();
  private readonly waiters = new Set<Waiter>();
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private closed = false;
  private readonly ready: Promise<void>;
  private retryTimer: NodeJS.Timeout | undefined;
  readonly stats: PodWatchStats = { lists: 0, watches: 0, expired: 0, bookmarks: 0, events: 0 };

  constructor(
    private readonly kc: KubeConfig,
    private readonly core: CoreV1Api,
    readonly namespace: string,
    private readonly retryMs = 500,
    /** Resume from a stored resourceVersion instead of listing first (a 410 then re-lists). */
    startFrom?: string,
  ) {
    if (startFrom === undefined) this.ready = this.relist();
    else {
      this.resourceVersion = startFrom;
      this.ready = Promise.resolve();
      this.startWatch();
    }
  }

  /** Resolves once the first list has been taken (the cache is then authoritative). */
  synced(): Promise<void> {
    return this.ready;
  }

  /** The resourceVersion a resumed watch starts from (the last event's or bookmark's). */
  get version(): string {
    return this.resourceVersion;
  }

  get(name: string): V1Pod | undefined {
    return this.pods.get(name);
  }

  all(): V1Pod[] {
    return [...this.pods.values()];
  }

  /** Resolves with the pod (or undefined once it is gone) as soon as `test` holds; rejects after `timeoutMs`. */
  waitFor(
    name: string,
    test: (pod: V1Pod | undefined) => boolean,
    timeoutMs: number,
  ): Promise<V1Pod | undefined> {
    if (test(this.pods.get(name))) return Promise.resolve(this.pods.get(name));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(
          new Error(`pod ${this.namespace}/${name} did not reach the expected state in ${timeoutMs} ms`),
        );
      }, timeoutMs);
      const waiter: Waiter = {
        name,
        test,
        resolve: (pod) => {
          clearTimeout(timer);
          resolve(pod);
        },
      };
      this.waiters.add(waiter);
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.abort?.abort();
  }

  private async relist(): Promise<void> {
    this.stats.lists += 1;
    const list = await this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: MANAGED_BY });
    const seen = new Set<string>();
    for (const pod of list.items) {
      const name = pod.metadata?.name ?? '';
      seen.add(name);
      this.pods.set(name, pod);
      this.notify(name);
    }
    for (const name of [...this.pods.keys()]) {
      if (!seen.has(name)) {
        this.pods.delete(name);
        this.notify(name);
      }
    }
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    // the cache is authoritative from here; the watch (whose request has no deadline in client-node's
    // Watch) catches up from this version whenever it connects, so synced() does not wait on it
    this.startWatch();
  }

  private startWatch(): void {
    this.watch().catch(() => this.resume(() => this.watch(), this.retryMs));
  }

  private async watch(): Promise<void> {
    if (this.closed) return;
    this.stats.watches += 1;
    let expired = false;
    let failed = false;
    const watch = new Watch(this.kc);
    const abort = await watch.watch(
      `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods`,
      { labelSelector: MANAGED_BY, resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
      (type: string, object: V1Pod & { code?: number }) => {
        if (type === 'ERROR') {
          // 410: the version was compacted away (re-list); anything else (a 500, a 504 "Too large
          // resource version") ends the stream too, and is retried after a pause, never in a hot loop
          if (object.code === 410) expired = true;
          else failed = true;
          return;
        }
        const version = object.metadata?.resourceVersion;
        if (version) this.resourceVersion = version;
        if (type === 'BOOKMARK') {
          this.stats.bookmarks += 1;
          return;
        }
        this.stats.events += 1;
        const name = object.metadata?.name ?? '';
        if (type === 'DELETED') this.pods.delete(name);
        else this.pods.set(name, object);
        this.notify(name);
      },
      (error: unknown) => {
        if (this.closed) return;
        // a 410 arrives as an ERROR event (the watch cache) or as the HTTP status of the watch request
        if (expired || (error as { statusCode?: number } | null)?.statusCode === 410) {
          this.stats.expired += 1;
          this.resume(() => this.relist());
        } else this.resume(() => this.watch(), error || failed ? this.retryMs : 0);
      },
    );
    // closed while the request was on its way: its stream must not outlive the close
    if (this.closed) abort.abort();
    else this.abort = abort;
  }

  private resume(step: () => Promise<void>, delayMs = 0): void {
    this.retryTimer = setTimeout(() => {
      step().catch(() => this.resume(step, this.retryMs));
    }, delayMs);
    this.retryTimer.unref();
  }

  private notify(name: string): void {
    const pod = this.pods.get(name);
    for (const w of [...this.waiters]) {
      if (w.name === name && w.test(pod)) {
        this.waiters.delete(w);
        w.resolve(pod);
      }
    }
  }
}
