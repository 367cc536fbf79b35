// Who owns a sandbox pod: each driver instance holds a coordination.k8s.io Lease per namespace it uses and
// renews it; `reap` removes only pods whose owner's lease is gone or expired (the instance crashed or was
// closed without disposing them), never pods a live instance holds.
import { type CoordinationV1Api, type V1Lease, V1MicroTime } from '@kubernetes/client-node';

export function leaseName(owner: string): string {
  return `everdict-driver-${owner}`;
}

function isNotFound(error: unknown): boolean {
  return (error as { code?: number }).code === 404;
}

export class OwnerLeases {
  private readonly held = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly api: CoordinationV1Api,
    readonly owner: string,
    private readonly durationSeconds: number,
  ) {}

  /** Take (or renew) this instance's lease in a namespace and keep renewing it. */
  async hold(namespace: string): Promise<void> {
    if (this.held.has(namespace)) return;
    await this.renew(namespace);
    const timer = setInterval(
      () => {
        this.renew(namespace).catch(() => undefined);
      },
      (this.durationSeconds * 1000) / 3,
    );
    timer.unref();
    this.held.set(namespace, timer);
  }

  private async renew(namespace: string): Promise<void> {
    const name = leaseName(this.owner);
    const body: V1Lease = {
      metadata: { name, namespace },
      spec: {
        holderIdentity: this.owner,
        leaseDurationSeconds: this.durationSeconds,
        // a MicroTime: the apiserver refuses a Date's millisecond `toISOString()` (it wants six digits)
        renewTime: new V1MicroTime(),
      },
    };
    try {
      const current = await this.api.readNamespacedLease({ name, namespace });
      body.metadata = { ...body.metadata, resourceVersion: current.metadata?.resourceVersion };
      await this.api.replaceNamespacedLease({ name, namespace, body });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await this.api.createNamespacedLease({ namespace, body });
    }
  }

  /** Whether `owner` holds a live lease in `namespace` (this instance always does). */
  async isLive(namespace: string, owner: string | undefined, now = Date.now()): Promise<boolean> {
    if (!owner) return false;
    if (owner === this.owner) return true;
    try {
      const lease = await this.api.readNamespacedLease({ name: leaseName(owner), namespace });
      const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
      return renewed + (lease.spec?.leaseDurationSeconds ?? 0) * 1000 > now;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /** Stop renewing and give the leases up (what this instance held becomes reapable). */
  async release(): Promise<void> {
    const namespaces = [...this.held.keys()];
    for (const timer of this.held.values()) clearInterval(timer);
    this.held.clear();
    await Promise.all(
      namespaces.map((namespace) =>
        this.api.deleteNamespacedLease({ name: leaseName(this.owner), namespace }).catch(() => undefined),
      ),
    );
  }
}
