// One namespace's everdict pods, kept current by a watch (never by polling): list once for a
// resourceVersion, then watch from it with bookmarks; a stream that ends is resumed from the last version
// seen (an event's or a bookmark's); a 410 Expired (the version was compacted away) re-lists and starts
// over. A stream that stays silent (no event, no bookmark) for `idleTimeoutMs` — a hung proxy or apiserver
// with the TCP connection alive — is cut and resumed the same way. Waiters are woken by the events themselves.
import type { Agent } from 'node:http';
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
  /** Streams cut for silence (no event or bookmark for `idleTimeoutMs`) and resumed. */
  idle: number;
}

export interface PodWatchOptions {
  /**
   * How long a watch stream may stay silent — no event, no bookmark, not even its response headers —
   * before it is cut and resumed from the last resourceVersion (a 410 then re-lists). Default 150 000 ms.
   */
  idleTimeoutMs?: number;
  /**
   * The `timeoutSeconds` each watch request asks the apiserver for (it then ends the stream cleanly and the
   * watch resumes). Default: random in [300, 600) per request, as client-go's reflector spreads them.
   */
  timeoutSeconds?: () => number;
}

const DEFAULT_IDLE_TIMEOUT_MS = 150_000;
const defaultTimeoutSeconds = () => 300 + Math.floor(Math.random() * 300);

/** A KubeConfig whose fetch options hand their agent to `onAgent` (client-node's Watch makes one per request). */
function capturingAgents(kc: KubeConfig, onAgent: (agent: Agent) => void): KubeConfig {
  const config = Object.create(kc) as KubeConfig;
  config.applyToFetchOptions = async (opts) => {
    const init = await kc.applyToFetchOptions(opts);
    const agent = init.agent as Agent | undefined;
    if (agent && typeof agent.destroy === 'function') onAgent(agent);
    return init;
  };
  return config;
}

export class PodWatch {
  private readonly pods = new Map<string, V1Pod>();
  private readonly waiters = new Set<Waiter>();
  private resourceVersion = '';
  private abort: AbortController | undefined;
  /** Cuts the current stream's connection (its request may not have been answered yet). */
  private cut: (() => void) | undefined;
  private closed = false;
  private readonly ready: Promise<void>;
  private retryTimer: NodeJS.Timeout | undefined;
  readonly stats: PodWatchStats = { lists: 0, watches: 0, expired: 0, bookmarks: 0, events: 0, idle: 0 };
  private readonly idleTimeoutMs: number;
  private readonly timeoutSeconds: () => number;

  constructor(
    private readonly kc: KubeConfig,
    private readonly core: CoreV1Api,
    readonly namespace: string,
    private readonly retryMs = 500,
    /** Resume from a stored resourceVersion instead of listing first (a 410 then re-lists). */
    startFrom?: string,
    options: PodWatchOptions = {},
  ) {
    // a Node timer of more than 2^31 − 1 ms fires at once
    this.idleTimeoutMs = Math.min(options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, 2 ** 31 - 1);
    this.timeoutSeconds = options.timeoutSeconds ?? defaultTimeoutSeconds;
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
    this.cut?.();
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
    // this stream was cut for silence: a new one has taken over, and its end means nothing
    let superseded = false;
    const agents: Agent[] = [];
    let controller: AbortController | undefined;
    const cut = () => {
      controller?.abort();
      // before the response headers there is no controller yet: destroying the request's own agent
      // fails the pending request (client-node's Watch request has no deadline of its own)
      for (const agent of agents) agent.destroy();
    };
    this.cut = cut;
    // re-armed by every line the stream brings (an event, a bookmark, an ERROR)
    const idleTimer = setTimeout(() => {
      if (this.closed || superseded) return;
      superseded = true;
      this.stats.idle += 1;
      cut();
      this.resume(() => this.watch());
    }, this.idleTimeoutMs);
    idleTimer.unref();
    const heard = () => idleTimer.refresh();
    const watch = new Watch(capturingAgents(this.kc, (agent) => agents.push(agent)));
    let abort: AbortController;
    try {
      abort = await watch.watch(
        `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods`,
        {
          labelSelector: MANAGED_BY,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: this.timeoutSeconds(),
        },
        (type: string, object: V1Pod & { code?: number }) => {
          if (superseded) return;
          heard();
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
          clearTimeout(idleTimer);
          if (this.closed || superseded) return;
          // a 410 arrives as an ERROR event (the watch cache) or as the HTTP status of the watch request
          if (expired || (error as { statusCode?: number } | null)?.statusCode === 410) {
            this.stats.expired += 1;
            this.resume(() => this.relist());
          } else this.resume(() => this.watch(), error || failed ? this.retryMs : 0);
        },
      );
    } catch (error) {
      // the request could not even be made (no cluster in the kubeconfig): the caller retries it
      clearTimeout(idleTimer);
      superseded = true;
      throw error;
    }
    controller = abort;
    // closed (or cut for silence) while the request was on its way: its stream must not outlive that
    if (this.closed || superseded) abort.abort();
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
