// The scheduler's fit check for the test server's one node: a pod fits when its containers' requests,
// added to those of the node's pods that are not finished, stay within the node's allocatable CPU and
// memory. A pod that does not fit stays Pending with the condition the real scheduler writes
// (PodScheduled False, reason Unschedulable, "0/1 nodes are available: 1 Insufficient memory. …").
// Unlike the real scheduler it does not try again when room frees up.
import { parseCpuMillis, parseQuantity } from '../../quantity.js';
import type { KubeObject } from '../selectors.js';
import { type Json, podSpec } from './pod-spec.js';
import { now } from './pod-status.js';

export interface Allocatable {
  cpu?: string | undefined;
  memory?: string | undefined;
}

function requested(pod: KubeObject): { cpu: bigint; memory: bigint } {
  let cpu = 0n;
  let memory = 0n;
  for (const c of podSpec(pod).containers) {
    cpu += parseCpuMillis(c.resources?.requests?.cpu ?? '0') ?? 0n;
    memory += parseQuantity(c.resources?.requests?.memory ?? '0') ?? 0n;
  }
  return { cpu, memory };
}

/** Why `pod` does not fit next to `bound` (the node's pods), or undefined when it does. */
export function unschedulable(
  pod: KubeObject,
  bound: readonly KubeObject[],
  allocatable: Allocatable,
): string | undefined {
  const want = requested(pod);
  const used = { cpu: 0n, memory: 0n };
  for (const other of bound) {
    const phase = (other.status as { phase?: string } | undefined)?.phase;
    if (other.metadata.uid === pod.metadata.uid || phase === 'Succeeded' || phase === 'Failed') continue;
    const r = requested(other);
    used.cpu += r.cpu;
    used.memory += r.memory;
  }
  const short: string[] = [];
  const cpu = allocatable.cpu === undefined ? undefined : parseCpuMillis(allocatable.cpu);
  const memory = allocatable.memory === undefined ? undefined : parseQuantity(allocatable.memory);
  if (cpu !== undefined && used.cpu + want.cpu > cpu) short.push('1 Insufficient cpu');
  if (memory !== undefined && used.memory + want.memory > memory) short.push('1 Insufficient memory');
  if (short.length === 0) return undefined;
  return `0/1 nodes are available: ${short.join(', ')}. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.`;
}

/** The condition the scheduler writes on a pod it could not place (the pod stays Pending). */
export function unschedulableCondition(message: string): Json {
  return {
    type: 'PodScheduled',
    status: 'False',
    lastProbeTime: null,
    lastTransitionTime: now(),
    reason: 'Unschedulable',
    message,
  };
}
