// The test Kubernetes API server: HTTP + WebSocket on 127.0.0.1, answering the paths the driver and kubectl
// use with the apiserver's wire shapes. Not a feature: it exists so the Kubernetes driver can be proven
// against real clients with no cluster in reach.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { z } from 'zod';
import { servingCertificate } from './certificate.js';
import { discovery } from './discovery.js';
import { EXEC_PROTOCOLS } from './exec-session.js';
import { Query, sendJson, sendStatus, statusOf } from './http.js';
import { kubeconfigFor } from './kubeconfig.js';
import { ObjectStore } from './object-store.js';
import { handleObjects, type ObjectContext } from './objects.js';
import { handleExecUpgrade, handleLog, negotiate } from './pod-streams.js';
import type { ContainerRunner } from './pods/container-runner.js';
import { defaultImageDigest, Kubelet } from './pods/kubelet.js';
import { normalizeImage } from './pods/pod-spec.js';
import { ProcessDriverRunner } from './pods/process-driver-runner.js';
import { refreshQuotaStatus } from './quota.js';
import { findType, type ResourceType } from './resources.js';
import { parseResourcePath } from './routes.js';
import type { KubeObject } from './selectors.js';
import { type ApiStatus, errors } from './status.js';
import type { OpenWatch } from './watch-stream.js';

const NamespaceSeed = z.union([
  z.string().min(1),
  z.object({ name: z.string().min(1), labels: z.record(z.string(), z.string()).optional() }),
]);

export const TestApiServerOptionsSchema = z.object({
  /** The bearer token clients must present (default: random). */
  token: z.string().min(1).optional(),
  /** Namespaces to create at start, besides default, kube-system, kube-public and kube-node-lease. */
  namespaces: z.array(NamespaceSeed).default([]),
  /** What runs pod containers (default: bubblewrap sandboxes of @everdict/placement-process). */
  runner: z
    .custom<ContainerRunner>((v) => typeof v === 'object' && v !== null && 'createSandbox' in v)
    .optional(),
  /** The exec protocols spoken, e.g. only v4 to exercise a client's fallback. */
  execProtocols: z
    .array(z.enum(EXEC_PROTOCOLS))
    .min(1)
    .default([...EXEC_PROTOCOLS]),
  /** How often a watch that allows bookmarks gets one. */
  bookmarkIntervalMs: z
    .number()
    .int()
    .positive()
    .max(2 ** 31 - 1)
    .default(60_000),
  /** How many changes are kept for watches to resume from; older versions answer 410. */
  historyLimit: z.number().int().positive().default(10_000),
  /** The registry digest reported in a container's imageID (default: sha256 of the normalized reference). */
  imageDigest: z.custom<(reference: string) => string>((v) => typeof v === 'function').optional(),
  /** Image references whose pull fails (ErrImagePull, then ImagePullBackOff). */
  unpullableImages: z.array(z.string()).default([]),
  restartBackoffMs: z
    .number()
    .int()
    .nonnegative()
    .max(2 ** 31 - 1)
    .default(1000),
  /** The process of a container with neither command nor args (an image's entrypoint is not known here). */
  defaultEntrypoint: z.array(z.string()).min(1).default(['sleep', 'infinity']),
  nodeName: z.string().min(1).default('everdict-test-node'),
  /**
   * The node's allocatable `cpu` and `memory` (quantities; default unbounded): a pod whose requests do not
   * fit stays Pending with PodScheduled False, reason Unschedulable, as the scheduler leaves it.
   */
  nodeAllocatable: z.object({ cpu: z.string().optional(), memory: z.string().optional() }).default({}),
});
export type TestApiServerOptions = z.input<typeof TestApiServerOptionsSchema>;

export interface RequestRecord {
  method: string;
  path: string;
  query: string;
  contentType: string | undefined;
  accept: string | undefined;
  upgrade: boolean;
}

export interface TestApiServer {
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** The PEM certificate the server presents; clients trust it as the cluster CA. */
  readonly certificate: string;
  /** Every request received, in order (method, path, query, content type…). */
  readonly requests: readonly RequestRecord[];
  /** A kubeconfig (JSON text) for this server; `namespace` is the context's default. */
  kubeconfig(namespace?: string): string;
  /** Write that kubeconfig into `dir` and return its path. */
  writeKubeconfig(dir: string, namespace?: string): Promise<string>;
  /**
   * `kubectl apply --validate=false -f <manifests>` against this server (kubeconfig and cache in `dir`):
   * the exit code (0 or 1) and kubectl's output. `EVERDICT_KUBECTL` names the binary (`/usr/bin/kubectl`).
   */
  kubectlApply(dir: string, namespace: string, manifests: string): Promise<{ code: number; out: string }>;
  /** A stored object, as a GET would return it (undefined when absent). */
  getObject(
    apiVersion: string,
    resource: string,
    namespace: string | undefined,
    name: string,
  ): KubeObject | undefined;
  /** The store's current resourceVersion. */
  readonly resourceVersion: string;
  /** Drop all change history, as an etcd compaction does: watches from an older version get 410 Expired. */
  compact(): void;
  /** End every open watch stream, as an apiserver restart or request timeout does. */
  endWatches(): void;
  /** Fault injection: the node stops acting on graceful deletes (pods stay Terminating until a grace-0 delete). */
  stallNode(stalled: boolean): void;
  readonly openWatches: number;
  /**
   * Fault injection: requests (and exec upgrades) that `match` are read and never answered, as behind a
   * load balancer whose apiserver hangs; `undefined` answers again. Held connections end at `close()`.
   */
  stallRequests(match: ((request: RequestRecord) => boolean) | undefined): void;
  /**
   * Fault injection: requests that `match` are carried out (a create creates) but their answer is never
   * sent, as when the apiserver committed a write and the connection back to the client then hung.
   */
  holdResponses(match: ((request: RequestRecord) => boolean) | undefined): void;
  /**
   * Fault injection: every watch open now goes silent — no events, no bookmarks, no end at
   * `timeoutSeconds`, the connection left open (a hung proxy). Watches opened later are served normally.
   */
  stallWatches(): void;
  /**
   * Fault injection: exec upgrades that `match` are accepted (101, the protocol agreed) but the kubelet
   * never runs the command and never sends a frame or a status, as a hung node's exec stream.
   */
  stallExecs(match: ((request: RequestRecord) => boolean) | undefined): void;
  /**
   * Fault injection: every new watch answers one ERROR event carrying `status` (HTTP 200) and ends, as the
   * apiserver does for a 500 from etcd or a 504 "Too large resource version"; `undefined` heals it.
   */
  failWatches(status: ApiStatus | undefined): void;
  /**
   * Fault injection: the kernel OOM-kills a container (all of it, as with memory.oom.group): execs in it
   * end with 137 and the container terminates with reason OOMKilled; false when it is not running.
   */
  oomKill(namespace: string, pod: string, container: string): boolean;
  /** How long a container's exit takes to show in its pod's status (a real kubelet: about a second). */
  statusLagMs: number;
  /**
   * How long a container's output takes to reach its pod log (a real node's log pipeline lags what the
   * process wrote); default 0. Set it before the output it should delay.
   */
  logLagMs: number;
  close(): Promise<void>;
}

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export async function startTestApiServer(input: TestApiServerOptions = {}): Promise<TestApiServer> {
  const options = TestApiServerOptionsSchema.parse(input);
  const scratch = await mkdtemp(join(tmpdir(), 'everdict-apiserver-'));
  await chmod(scratch, 0o711); // sandbox users must reach their workspaces below it
  const token = options.token ?? randomBytes(24).toString('base64url');
  const store = new ObjectStore(options.historyLimit);
  const unpullable = new Set(options.unpullableImages.map(normalizeImage));
  const kubelet = new Kubelet(store, {
    nodeName: options.nodeName,
    runner: options.runner ?? new ProcessDriverRunner({ driver: { stateDir: join(scratch, 'placement') } }),
    imageDigest: options.imageDigest ?? defaultImageDigest,
    pullable: (ref) => !unpullable.has(normalizeImage(ref)),
    restartBackoffMs: options.restartBackoffMs,
    defaultEntrypoint: options.defaultEntrypoint,
    onPodChange: (namespace) => refreshQuotaStatus(store, namespace),
    allocatable: options.nodeAllocatable,
  });
  const watches = new Set<OpenWatch>();
  const requests: RequestRecord[] = [];
  const namespaces = findType('', 'v1', 'namespaces') as ResourceType;
  for (const seed of [...SYSTEM_NAMESPACES, ...options.namespaces]) {
    const { name, labels } = typeof seed === 'string' ? { name: seed, labels: undefined } : seed;
    store.create(namespaces, {
      metadata: { name, labels: { ...(labels ?? {}), 'kubernetes.io/metadata.name': name } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    });
  }
  const ctx: ObjectContext = { store, kubelet, watches, bookmarkIntervalMs: options.bookmarkIntervalMs };
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => negotiate([...offered], options.execProtocols) ?? false,
  });
  let serverAddress = '127.0.0.1:0';

  const authorized = (req: IncomingMessage): boolean => {
    if (req.headers.authorization === `Bearer ${token}`) return true;
    const prefix = 'base64url.bearer.authorization.k8s.io.';
    const offered = (req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
    return offered.some(
      (p) => p.startsWith(prefix) && Buffer.from(p.slice(prefix.length), 'base64url').toString() === token,
    );
  };
  type Match = ((request: RequestRecord) => boolean) | undefined;
  let stall: Match;
  let holdResponse: Match;
  let stallExec: Match;
  const held = new Set<Duplex>();
  const hold = (socket: Duplex) => {
    held.add(socket);
    socket.once('close', () => held.delete(socket));
  };
  /** Records the request: its record, or false when it is to be held unanswered (`stallRequests`). */
  const record = (req: IncomingMessage, url: URL, upgrade: boolean): RequestRecord | false => {
    const entry: RequestRecord = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search,
      contentType: req.headers['content-type'],
      accept: req.headers.accept,
      upgrade,
    };
    requests.push(entry);
    if (stall?.(entry)) {
      hold(req.socket);
      return false;
    }
    return entry;
  };
  /** `holdResponses`: the handler runs, and everything it answers is dropped (the socket is kept open). */
  const mute = (res: ServerResponse): void => {
    hold(res.socket as Duplex);
    res.writeHead = (() => res) as unknown as ServerResponse['writeHead'];
    res.flushHeaders = () => undefined;
    res.write = () => true;
    res.end = (() => res) as unknown as ServerResponse['end'];
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const entry = record(req, url, false);
    if (!entry) return;
    if (holdResponse?.(entry)) mute(res);
    if (['/healthz', '/livez', '/readyz'].includes(url.pathname)) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      return void res.end('ok');
    }
    if (!authorized(req)) return sendStatus(res, errors.unauthorized().status);
    const document = discovery(url.pathname, serverAddress);
    if (document !== undefined) return sendJson(res, 200, document);
    const route = parseResourcePath(url.pathname);
    if (!route) throw errors.pathNotFound();
    const query = new Query(url.searchParams);
    if (route.subresource === 'log') return handleLog(kubelet, route, req, res, query);
    if (route.subresource === 'exec') throw errors.badRequest('Upgrade request required');
    if (route.subresource === 'status' && req.method !== 'GET') throw errors.methodNotAllowed();
    return handleObjects(ctx, route, req, res, query);
  };

  const tls = await servingCertificate();
  // noDelay: without it, small TLS records wait on delayed ACKs (~40 ms a round trip on loopback)
  const server = createServer({ key: tls.key, cert: tls.cert, noDelay: true }, (req, res) => {
    handle(req, res).catch((error: unknown) => sendStatus(res, statusOf(error)));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const entry = record(req, url, true);
    if (!entry) return;
    const refuse = (code: number, text: string) =>
      socket.end(`HTTP/1.1 ${code} ${text}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    if (!authorized(req)) return refuse(401, 'Unauthorized');
    let route: ReturnType<typeof parseResourcePath>;
    try {
      route = parseResourcePath(url.pathname);
    } catch {
      route = undefined;
    }
    if (route?.type.kind !== 'Pod' || route.subresource !== 'exec' || !route.name)
      return refuse(404, 'Not Found');
    if (stallExec?.(entry)) {
      hold(socket);
      return wss.handleUpgrade(req, socket, head, () => undefined);
    }
    handleExecUpgrade(
      kubelet,
      wss,
      options.execProtocols,
      route,
      req,
      socket,
      head,
      new Query(url.searchParams),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  serverAddress = `127.0.0.1:${port}`;
  const url = `https://127.0.0.1:${port}`;
  const kubeconfig = (namespace?: string) =>
    kubeconfigFor({ server: url, certificate: tls.cert, token, namespace });

  const writeKubeconfig = async (dir: string, namespace?: string): Promise<string> => {
    const path = join(dir, 'kubeconfig.json');
    await writeFile(path, kubeconfig(namespace), { mode: 0o600 });
    return path;
  };

  return {
    url,
    port,
    token,
    requests,
    certificate: tls.cert,
    kubeconfig,
    writeKubeconfig,
    kubectlApply: async (dir, namespace, manifests) => {
      const config = await writeKubeconfig(dir, namespace);
      const args = ['--kubeconfig', config, '--cache-dir', join(dir, 'cache'), 'apply', '--validate=false'];
      return new Promise((resolve) => {
        execFile(
          process.env.EVERDICT_KUBECTL ?? '/usr/bin/kubectl',
          [...args, '-f', manifests],
          (error, stdout, stderr) => resolve({ code: error ? 1 : 0, out: stdout + stderr }),
        );
      });
    },
    getObject: (apiVersion, resource, namespace, name) => {
      const [group, version] = apiVersion.includes('/')
        ? (apiVersion.split('/') as [string, string])
        : ['', apiVersion];
      const type = findType(group, version, resource);
      return type ? store.get(type, namespace, name) : undefined;
    },
    get resourceVersion() {
      return store.resourceVersion;
    },
    compact: () => store.compact(),
    endWatches: () => {
      for (const w of [...watches]) w.end();
    },
    stallNode: (stalled) => {
      kubelet.stalled = stalled;
    },
    get openWatches() {
      return watches.size;
    },
    stallRequests: (match) => {
      stall = match;
    },
    holdResponses: (match) => {
      holdResponse = match;
    },
    stallWatches: () => {
      for (const w of watches) w.stall();
    },
    stallExecs: (match) => {
      stallExec = match;
    },
    failWatches: (status) => {
      ctx.failWatch = status;
    },
    oomKill: (namespace, pod, container) => kubelet.oomKill(namespace, pod, container),
    get statusLagMs() {
      return kubelet.statusLagMs;
    },
    set statusLagMs(ms: number) {
      kubelet.statusLagMs = ms;
    },
    get logLagMs() {
      return kubelet.logLagMs;
    },
    set logLagMs(ms: number) {
      kubelet.logLagMs = ms;
    },
    close: async () => {
      for (const socket of [...held]) socket.destroy();
      for (const w of [...watches]) w.end();
      await kubelet.shutdown();
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
