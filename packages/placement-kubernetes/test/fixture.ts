// A test API server plus drivers bound to fresh namespaces of it (restricted Pod Security enforced, a
// ResourceQuota of `slots` pods), as the contract suite and the driver tests use them.
import { randomBytes } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { KubernetesDriver, type KubernetesDriverConfigInput } from '../src/index.js';
import { startTestApiServer, type TestApiServer, type TestApiServerOptions } from '../src/testing/index.js';

export const MISSING_IMAGE = 'alpine:3.20';
/**
 * The request deadline of drivers in tests that are not about timeouts. The test API server answers in this
 * process, so on a starved machine (load 30–40 on 2 cores) an ordinary list, delete or lease write has taken
 * more than the driver's default 30 s: well above that, still below the test timeout (300 s).
 */
export const CALM_REQUEST_TIMEOUT_MS = 120_000;

export class DriverFixture {
  private readonly namespaces = new Map<KubernetesDriver, string>();
  private constructor(
    readonly server: TestApiServer,
    readonly kc: KubeConfig,
  ) {}

  static async start(options: TestApiServerOptions = {}): Promise<DriverFixture> {
    const server = await startTestApiServer({
      unpullableImages: [MISSING_IMAGE],
      bookmarkIntervalMs: 200,
      ...options,
    });
    const kc = new KubeConfig();
    kc.loadFromString(server.kubeconfig());
    return new DriverFixture(server, kc);
  }

  get core(): CoreV1Api {
    return this.kc.makeApiClient(CoreV1Api);
  }

  /** A namespace enforcing restricted Pod Security, with a quota of `slots` pods when given. */
  async namespace(slots?: number): Promise<string> {
    const name = `t-${randomBytes(4).toString('hex')}`;
    await this.core.createNamespace({
      body: { metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
    });
    if (slots !== undefined) {
      await this.core.createNamespacedResourceQuota({
        namespace: name,
        body: { metadata: { name: 'sandboxes' }, spec: { hard: { pods: String(slots) } } },
      });
    }
    return name;
  }

  async driver(options: { slots?: number } & KubernetesDriverConfigInput = {}): Promise<KubernetesDriver> {
    const { slots, ...config } = options;
    const namespace = typeof config.namespace === 'string' ? config.namespace : await this.namespace(slots);
    const driver = new KubernetesDriver({
      kubeConfig: this.kc,
      namespace,
      terminationGracePeriodSeconds: 2,
      leaseDurationSeconds: 2,
      ...config,
    });
    this.namespaces.set(driver, namespace);
    return driver;
  }

  async closeDriver(driver: KubernetesDriver): Promise<void> {
    await driver.close();
  }

  async close(): Promise<void> {
    await this.server.close();
  }
}
