// meta.k8s.io/v1 Table responses, which kubectl requests for its human-readable output: the pod printer's
// columns (NAME READY STATUS RESTARTS AGE …) and the default NAME / CREATED AT for every other kind.
import type { ResourceType } from './resources.js';
import type { KubeObject } from './selectors.js';

type Column = { name: string; type: string; format: string; description: string; priority: number };

const column = (name: string, type: string, description: string, priority = 0, format = ''): Column => ({
  name,
  type,
  format,
  description,
  priority,
});

const POD_COLUMNS = [
  column('Name', 'string', 'Name must be unique within a namespace.', 0, 'name'),
  column('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
  column('Status', 'string', 'The aggregate status of the containers in this pod.'),
  column('Restarts', 'string', 'The number of times the containers in this pod have been restarted.'),
  column(
    'Age',
    'string',
    'CreationTimestamp is a timestamp representing the server time when this object was created.',
  ),
  column('IP', 'string', 'IP address allocated to the pod.', 1),
  column('Node', 'string', 'Name of the node this pod is assigned to.', 1),
];
const DEFAULT_COLUMNS = [
  column('Name', 'string', 'Name must be unique within a namespace.', 0, 'name'),
  column(
    'Created At',
    'date',
    'CreationTimestamp is a timestamp representing the server time when this object was created.',
  ),
];

/** kubectl's short durations: 45s, 5m, 3h, 2d. */
export function age(timestamp: unknown): string {
  if (typeof timestamp !== 'string') return '<unknown>';
  const seconds = Math.max(0, Math.floor((Date.now() - Date.parse(timestamp)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 3600 * 3) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86400 * 2) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

type ContainerStatus = {
  ready?: boolean;
  restartCount?: number;
  state?: Record<string, { reason?: string }>;
};

function podCells(pod: KubeObject): unknown[] {
  const status = (pod.status ?? {}) as {
    phase?: string;
    reason?: string;
    podIP?: string;
    containerStatuses?: ContainerStatus[];
  };
  const containers = status.containerStatuses ?? [];
  const total = ((pod.spec as { containers?: unknown[] }).containers ?? []).length;
  let reason = status.reason ?? status.phase ?? 'Unknown';
  for (const c of containers) {
    const state = c.state ?? {};
    if (state.waiting?.reason) reason = state.waiting.reason;
    else if (state.terminated?.reason && reason !== 'Running') reason = state.terminated.reason;
  }
  if (
    status.phase === 'Running' &&
    containers.some((c) => c.state?.terminated) &&
    containers.every((c) => !c.ready)
  ) {
    reason = 'NotReady';
  }
  if (pod.metadata.deletionTimestamp) reason = 'Terminating';
  const ready = containers.filter((c) => c.ready).length;
  const restarts = containers.reduce((n, c) => n + (c.restartCount ?? 0), 0);
  return [
    pod.metadata.name,
    `${ready}/${total}`,
    reason,
    String(restarts),
    age(pod.metadata.creationTimestamp),
    status.podIP ?? '<none>',
    (pod.spec as { nodeName?: string }).nodeName ?? '<none>',
  ];
}

function rowObject(object: KubeObject, include: string): unknown {
  if (include === 'None') return undefined;
  if (include === 'Object') return object;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata };
}

export function toTable(
  type: ResourceType,
  objects: KubeObject[],
  resourceVersion: string,
  includeObject: string | null,
  withColumns = true,
): Record<string, unknown> {
  const include = includeObject ?? 'Metadata';
  const isPod = type.kind === 'Pod';
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    ...(withColumns
      ? { columnDefinitions: isPod ? POD_COLUMNS : DEFAULT_COLUMNS }
      : { columnDefinitions: null }),
    rows: objects.map((o) => ({
      cells: isPod ? podCells(o) : [o.metadata.name, o.metadata.creationTimestamp],
      object: rowObject(o, include),
    })),
  };
}
