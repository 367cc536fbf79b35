// The Pod of one sandbox, and the handle read back from it. Restricted Pod Security: non-root user, no
// privilege escalation, every capability dropped, seccomp RuntimeDefault, read-only root filesystem with
// emptyDir volumes for the workspace, /tmp and the driver's control files; no service-account token;
// requests = limits (memory, ephemeral storage, and CPU when a share is given), the workspace's emptyDir
// sizeLimit the same disk amount; activeDeadlineSeconds = the sandbox's deadline.
import {
  environmentOf,
  type Labels,
  PlacementError,
  type ProvisionSpec,
  ResourceLimits,
  type SandboxHandle,
} from '@everdict/placement';
import type { V1Pod } from '@kubernetes/client-node';
import { z } from 'zod';
import { LABELS_ANNOTATION, labelsOf, podLabels, SANDBOX_ANNOTATION } from './labels.js';
import { formatBytes } from './quantity.js';
import { CONTAINER, CONTROL_ENV, KEEPER } from './sandbox-scripts.js';

export const DRIVER_NAME = 'kubernetes';
export const WORKSPACE_PATH = '/workspace';
export const CONTROL_PATH = '/run/everdict';

export interface PodSettings {
  namespace: string;
  /** The container image `image` names (`default` maps to the configured default image). */
  containerImage: string;
  owner: string;
  runAsUser: number;
  terminationGracePeriodSeconds: number;
  /** The sandbox's disk: the workspace emptyDir's sizeLimit and the container's ephemeral-storage. */
  diskBytes: number;
}

/** What the pod remembers of its spec, so any driver instance can rebuild the handle from the pod alone. */
const SandboxRecord = z.strictObject({
  image: z.string(),
  limits: ResourceLimits,
  network: z.enum(['none', 'granted']),
  createdAtMs: z.number().int().nonnegative(),
});

export function sandboxPod(
  id: string,
  spec: ProvisionSpec,
  settings: PodSettings,
  createdAtMs: number,
): V1Pod {
  const { limits } = spec;
  const disk = formatBytes(BigInt(settings.diskBytes));
  const resources: Record<string, string> = {
    memory: String(limits.memoryBytes),
    'ephemeral-storage': disk,
  };
  if (limits.cpus !== undefined) resources.cpu = `${Math.max(1, Math.round(limits.cpus * 1000))}m`;
  const record = { image: spec.image, limits, network: spec.network, createdAtMs };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: id,
      namespace: settings.namespace,
      labels: podLabels(spec.labels, spec.network, settings.owner),
      annotations: {
        [LABELS_ANNOTATION]: JSON.stringify(spec.labels),
        [SANDBOX_ANNOTATION]: JSON.stringify(record),
      },
    },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: settings.terminationGracePeriodSeconds,
      activeDeadlineSeconds: Math.max(1, Math.ceil(limits.wallTimeoutMs / 1000)),
      securityContext: {
        runAsNonRoot: true,
        runAsUser: settings.runAsUser,
        runAsGroup: settings.runAsUser,
        fsGroup: settings.runAsUser,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: CONTAINER,
          image: settings.containerImage,
          command: KEEPER,
          workingDir: WORKSPACE_PATH,
          env: [
            { name: CONTROL_ENV, value: CONTROL_PATH },
            { name: 'HOME', value: WORKSPACE_PATH },
            { name: 'TMPDIR', value: '/tmp' },
            ...Object.entries(spec.env).map(([name, value]) => ({ name, value })),
          ],
          resources: { requests: resources, limits: resources },
          securityContext: {
            runAsNonRoot: true,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [
            { name: 'workspace', mountPath: WORKSPACE_PATH },
            { name: 'tmp', mountPath: '/tmp' },
            { name: 'control', mountPath: CONTROL_PATH },
          ],
        },
      ],
      volumes: [
        { name: 'workspace', emptyDir: { sizeLimit: disk } },
        { name: 'tmp', emptyDir: {} },
        { name: 'control', emptyDir: {} },
      ],
    },
  };
}

/** `sha256:…` from a container status imageID (`repo@sha256:…`, `docker-pullable://repo@sha256:…`). */
export function imageDigestOf(pod: V1Pod): string | null {
  const imageID = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER)?.imageID ?? '';
  const at = imageID.lastIndexOf('@');
  const digest = at === -1 ? imageID : imageID.slice(at + 1);
  return /^sha256:[0-9a-f]{64}$/.test(digest) ? digest : null;
}

/** The handle of a sandbox pod, or undefined when the pod is not one (its annotations do not parse). */
export function handleOf(pod: V1Pod): SandboxHandle | undefined {
  const labels: Labels | undefined = labelsOf(pod.metadata?.annotations);
  const raw = pod.metadata?.annotations?.[SANDBOX_ANNOTATION];
  if (!labels || !raw || !pod.metadata?.name) return undefined;
  let record: z.infer<typeof SandboxRecord>;
  try {
    record = SandboxRecord.parse(JSON.parse(raw));
  } catch {
    return undefined;
  }
  return {
    id: pod.metadata.name,
    driver: DRIVER_NAME,
    labels,
    environment: environmentOf(DRIVER_NAME, record.image, imageDigestOf(pod)),
    limits: record.limits,
    network: record.network,
    createdAtMs: record.createdAtMs,
    deadlineMs: record.createdAtMs + record.limits.wallTimeoutMs,
  };
}

export type PodState = 'pending' | 'running' | 'image_not_found' | 'failed' | 'gone';

/** Where a starting sandbox pod stands. */
export function podState(pod: V1Pod | undefined): PodState {
  if (!pod || pod.metadata?.deletionTimestamp) return 'gone';
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return 'failed';
  const status = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER);
  const waiting = status?.state?.waiting?.reason;
  if (waiting === 'ErrImagePull' || waiting === 'ImagePullBackOff' || waiting === 'InvalidImageName')
    return 'image_not_found';
  if (waiting === 'CreateContainerConfigError' || waiting === 'CreateContainerError') return 'failed';
  if (phase === 'Running' && status?.state?.running) return 'running';
  return 'pending';
}

/** The scheduler's reason a pod is not placed (PodScheduled False, reason Unschedulable), if it is not. */
export function unschedulableReason(pod: V1Pod | undefined): string | undefined {
  const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status !== 'False' || scheduled.reason !== 'Unschedulable') return undefined;
  return scheduled.message ?? scheduled.reason;
}

/** Why a pod could not start, in the words the cluster used. */
export function podProblem(pod: V1Pod | undefined): string {
  const status = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER);
  const state = status?.state;
  return (
    unschedulableReason(pod) ??
    state?.waiting?.message ??
    state?.waiting?.reason ??
    state?.terminated?.message ??
    state?.terminated?.reason ??
    pod?.status?.message ??
    pod?.status?.reason ??
    'the pod is gone'
  );
}

/** Why a sandbox pod cannot run commands now: past its deadline, OOM-killed, or gone; undefined if it can. */
export function sandboxFailure(handle: SandboxHandle, pod: V1Pod | undefined): PlacementError | undefined {
  if (Date.now() >= handle.deadlineMs || pod?.status?.reason === 'DeadlineExceeded') {
    return new PlacementError('timeout', 'the sandbox passed its wall deadline', {
      bound: 'deadline',
      deadlineMs: handle.deadlineMs,
    });
  }
  const terminated = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER)?.state?.terminated;
  if (terminated?.reason === 'OOMKilled')
    return new PlacementError('oom', 'the sandbox hit its memory limit', { id: handle.id });
  if (!pod || pod.metadata?.deletionTimestamp || terminated) {
    return new PlacementError('gone', `sandbox ${handle.id} no longer runs`, { id: handle.id });
  }
  return undefined;
}
