// What the apiserver does to a Pod before storing it (defaulting, validation) and what the kubelet reads
// from one (container launches, the QoS class, image naming). Plain JSON in, plain JSON out.
import { parseCpuMillis, parseQuantity } from '../../quantity.js';
import type { KubeObject } from '../selectors.js';
import { errors, type StatusCause } from '../status.js';
import type { ContainerLaunch, PodSandboxSpec } from './container-runner.js';

export type Json = Record<string, unknown>;

export interface ContainerSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
  workingDir?: string;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Json;
  imagePullPolicy?: string;
  [key: string]: unknown;
}

export interface PodSpec {
  containers: ContainerSpec[];
  initContainers?: ContainerSpec[];
  volumes?: ({ name: string } & Json)[];
  restartPolicy?: string;
  activeDeadlineSeconds?: number;
  terminationGracePeriodSeconds?: number;
  securityContext?: Json;
  nodeName?: string;
  [key: string]: unknown;
}

export const podSpec = (pod: KubeObject): PodSpec => pod.spec as PodSpec;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The field checks the apiserver's validation makes on a Pod that matter to running it. */
export function validatePod(pod: KubeObject): void {
  const causes: StatusCause[] = [];
  const spec = pod.spec as Partial<PodSpec> | undefined;
  const containers = Array.isArray(spec?.containers) ? spec.containers : [];
  if (containers.length === 0)
    causes.push({ field: 'spec.containers', message: 'Required value', reason: 'FieldValueRequired' });
  const volumes = new Set((spec?.volumes ?? []).map((v) => v.name));
  const names = new Set<string>();
  containers.forEach((c, i) => {
    const at = `spec.containers[${i}]`;
    if (!c.name)
      causes.push({ field: `${at}.name`, message: 'Required value', reason: 'FieldValueRequired' });
    else if (!DNS_LABEL.test(c.name))
      causes.push({
        field: `${at}.name`,
        message: `Invalid value: "${c.name}"`,
        reason: 'FieldValueInvalid',
      });
    else if (names.has(c.name))
      causes.push({
        field: `${at}.name`,
        message: `Duplicate value: "${c.name}"`,
        reason: 'FieldValueDuplicate',
      });
    names.add(c.name);
    if (!c.image)
      causes.push({ field: `${at}.image`, message: 'Required value', reason: 'FieldValueRequired' });
    (c.volumeMounts ?? []).forEach((m, j) => {
      if (!volumes.has(m.name)) {
        causes.push({
          field: `${at}.volumeMounts[${j}].name`,
          message: `Not found: "${m.name}"`,
          reason: 'FieldValueNotFound',
        });
      }
    });
  });
  const policy = spec?.restartPolicy;
  if (policy !== undefined && !['Always', 'OnFailure', 'Never'].includes(policy)) {
    causes.push({
      field: 'spec.restartPolicy',
      message: `Unsupported value: "${policy}"`,
      reason: 'FieldValueNotSupported',
    });
  }
  const deadline = spec?.activeDeadlineSeconds;
  if (deadline !== undefined && (!Number.isInteger(deadline) || deadline <= 0)) {
    causes.push({
      field: 'spec.activeDeadlineSeconds',
      message: 'must be a positive integer',
      reason: 'FieldValueInvalid',
    });
  }
  if (causes.length > 0) throw errors.invalid('Pod', '', pod.metadata.name, causes);
}

/** The apiserver's defaults for the fields the kubelet and clients read. */
export function defaultPod(pod: KubeObject): KubeObject {
  const spec = pod.spec as PodSpec;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.serviceAccountName ??= (spec.serviceAccount as string | undefined) ?? 'default';
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  spec.priority ??= 0;
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
    const tag = c.image.includes('@') ? 'digest' : (c.image.split('/').pop()?.split(':')[1] ?? 'latest');
    c.imagePullPolicy ??= tag === 'latest' ? 'Always' : 'IfNotPresent';
    c.terminationMessagePath ??= '/dev/termination-log';
    c.terminationMessagePolicy ??= 'File';
    c.resources ??= {};
    // requests default to limits where only limits are given
    const { limits, requests } = c.resources;
    if (limits) c.resources.requests = { ...limits, ...(requests ?? {}) };
  }
  pod.status = { phase: 'Pending', qosClass: qosClass(spec) };
  return pod;
}

export function qosClass(spec: PodSpec): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const all = spec.containers;
  const any = all.some(
    (c) =>
      Object.keys(c.resources?.requests ?? {}).length + Object.keys(c.resources?.limits ?? {}).length > 0,
  );
  if (!any) return 'BestEffort';
  const guaranteed = all.every((c) =>
    ['cpu', 'memory'].every((r) => {
      const limit = c.resources?.limits?.[r];
      return limit !== undefined && (c.resources?.requests?.[r] ?? limit) === limit;
    }),
  );
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** `alpine:3.20` → `docker.io/library/alpine:3.20`, as the container runtime reports it. */
export function normalizeImage(image: string): string {
  const [first = '', ...rest] = image.split('/');
  const hasRegistry =
    rest.length > 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  let path = hasRegistry ? rest.join('/') : image;
  const registry = hasRegistry ? first : 'docker.io';
  if (registry === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  const named = path.includes('@') || /:[^/]+$/.test(path) ? path : `${path}:latest`;
  return `${registry}/${named}`;
}

/** The repository part of a normalized reference (no tag, no digest). */
export function imageRepository(image: string): string {
  const normalized = normalizeImage(image);
  const at = normalized.indexOf('@');
  if (at !== -1) return normalized.slice(0, at);
  return normalized.replace(/:[^/]+$/, '');
}

function effective<T>(container: ContainerSpec, pod: PodSpec, key: string): T | undefined {
  const fromContainer = container.securityContext?.[key];
  return (fromContainer ?? pod.securityContext?.[key]) as T | undefined;
}

export function launchOf(pod: KubeObject, c: ContainerSpec, defaultEntrypoint: string[]): ContainerLaunch {
  const spec = podSpec(pod);
  const env: Record<string, string> = { HOSTNAME: pod.metadata.name };
  for (const e of c.env ?? []) env[e.name] = e.value ?? '';
  const argv = c.command
    ? [...c.command, ...(c.args ?? [])]
    : c.args?.length
      ? [...c.args]
      : [...defaultEntrypoint];
  const memory = c.resources?.limits?.memory;
  const cpu = c.resources?.limits?.cpu;
  return {
    name: c.name,
    image: c.image,
    argv,
    env,
    workingDir: c.workingDir,
    mounts: (c.volumeMounts ?? []).map((m) => ({
      name: m.name,
      mountPath: m.mountPath,
      readOnly: m.readOnly === true,
    })),
    runAsUser: effective<number>(c, spec, 'runAsUser'),
    runAsGroup: effective<number>(c, spec, 'runAsGroup'),
    readOnlyRootFilesystem: c.securityContext?.readOnlyRootFilesystem === true,
    memoryLimitBytes: memory === undefined ? undefined : parseQuantity(memory),
    cpuLimitMillis: cpu === undefined ? undefined : parseCpuMillis(cpu),
  };
}

export function sandboxSpecOf(pod: KubeObject, launches: ContainerLaunch[]): Omit<PodSandboxSpec, 'network'> {
  const spec = podSpec(pod);
  return {
    uid: String(pod.metadata.uid),
    name: pod.metadata.name,
    namespace: pod.metadata.namespace ?? 'default',
    volumes: (spec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name),
    fsGroup: spec.securityContext?.fsGroup as number | undefined,
    containers: launches,
  };
}

/** runAsNonRoot with no non-zero runAsUser: the kubelet refuses to start it (the image runs as root). */
export function runAsRootRefusal(pod: KubeObject, c: ContainerSpec): string | undefined {
  const spec = podSpec(pod);
  if (effective<boolean>(c, spec, 'runAsNonRoot') !== true) return undefined;
  const user = effective<number>(c, spec, 'runAsUser');
  if (user === undefined) return 'container has runAsNonRoot and image will run as root';
  if (user === 0) return "container's runAsUser breaks non-root policy";
  return undefined;
}
