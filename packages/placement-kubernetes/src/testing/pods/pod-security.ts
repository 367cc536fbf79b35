// Pod Security admission at the "restricted" level (what a namespace labelled
// `pod-security.kubernetes.io/enforce: restricted` refuses), with the apiserver's message shape:
// `violates PodSecurity "restricted:latest": <check> (<detail>), …`.
import type { KubeObject } from '../selectors.js';
import type { ContainerSpec, Json, PodSpec } from './pod-spec.js';

const ALLOWED_VOLUMES = [
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
];
export const ENFORCE_LABEL = 'pod-security.kubernetes.io/enforce';

function quoteList(names: string[]): string {
  return names.map((n) => `"${n}"`).join(', ');
}

function containersOf(spec: PodSpec): ContainerSpec[] {
  return [
    ...(spec.initContainers ?? []),
    ...spec.containers,
    ...((spec.ephemeralContainers as ContainerSpec[]) ?? []),
  ];
}

/** The violated checks of the restricted profile, in the order the apiserver lists them. */
export function restrictedViolations(pod: KubeObject): string[] {
  const spec = pod.spec as PodSpec;
  const podCtx = (spec.securityContext ?? {}) as Json;
  const containers = containersOf(spec);
  const ctx = (c: ContainerSpec) => (c.securityContext ?? {}) as Json;
  const out: string[] = [];

  const hostNs = ['hostNetwork', 'hostPID', 'hostIPC'].filter((k) => spec[k] === true);
  if (hostNs.length) out.push(`host namespaces (${hostNs.map((k) => `${k}=true`).join(', ')})`);

  const privileged = containers.filter((c) => ctx(c).privileged === true).map((c) => c.name);
  if (privileged.length)
    out.push(`privileged (container ${quoteList(privileged)} must not set securityContext.privileged=true)`);

  const escalating = containers.filter((c) => ctx(c).allowPrivilegeEscalation !== false).map((c) => c.name);
  if (escalating.length) {
    out.push(
      `allowPrivilegeEscalation != false (container ${quoteList(escalating)} must set securityContext.allowPrivilegeEscalation=false)`,
    );
  }

  const notDropped = containers
    .filter(
      (c) =>
        !(((ctx(c).capabilities as Json | undefined)?.drop as string[] | undefined) ?? []).includes('ALL'),
    )
    .map((c) => c.name);
  const added = containers.flatMap((c) =>
    (((ctx(c).capabilities as Json | undefined)?.add as string[] | undefined) ?? [])
      .filter((cap) => cap !== 'NET_BIND_SERVICE')
      .map((cap) => ({ container: c.name, cap })),
  );
  if (notDropped.length || added.length) {
    const details = [
      ...(notDropped.length
        ? [`container ${quoteList(notDropped)} must set securityContext.capabilities.drop=["ALL"]`]
        : []),
      ...added.map(
        (a) => `container "${a.container}" must not include "${a.cap}" in securityContext.capabilities.add`,
      ),
    ];
    out.push(`unrestricted capabilities (${details.join('; ')})`);
  }

  const volumes = (spec.volumes ?? []).flatMap((v) => {
    const kind = Object.keys(v).find((k) => k !== 'name');
    return kind && !ALLOWED_VOLUMES.includes(kind)
      ? [`volume "${v.name}" uses restricted volume type "${kind}"`]
      : [];
  });
  if (volumes.length) out.push(`restricted volume types (${volumes.join('; ')})`);

  const podNonRoot = podCtx.runAsNonRoot === true;
  const rootish = containers
    .filter((c) => (ctx(c).runAsNonRoot ?? (podNonRoot ? true : undefined)) !== true)
    .map((c) => c.name);
  if (podCtx.runAsNonRoot === false || rootish.length) {
    out.push(
      `runAsNonRoot != true (pod or container ${quoteList(rootish)} must set securityContext.runAsNonRoot=true)`,
    );
  }

  const rootUser = containers.filter((c) => (ctx(c).runAsUser ?? podCtx.runAsUser) === 0).map((c) => c.name);
  if (rootUser.length) out.push(`runAsUser=0 (container ${quoteList(rootUser)} must not set runAsUser=0)`);

  const seccomp = (value: unknown) => {
    const type = (value as Json | undefined)?.type;
    return type === 'RuntimeDefault' || type === 'Localhost';
  };
  const podSeccomp = seccomp(podCtx.seccompProfile);
  const noSeccomp = containers
    .filter((c) => !(seccomp(ctx(c).seccompProfile) || (podSeccomp && ctx(c).seccompProfile === undefined)))
    .map((c) => c.name);
  if (noSeccomp.length) {
    out.push(
      `seccompProfile (pod or container ${quoteList(noSeccomp)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`,
    );
  }
  return out;
}

/** The refusal message when a namespace enforces "restricted" and the pod violates it. */
export function podSecurityRefusal(namespace: KubeObject | undefined, pod: KubeObject): string | undefined {
  if (namespace?.metadata.labels?.[ENFORCE_LABEL] !== 'restricted') return undefined;
  const violations = restrictedViolations(pod);
  return violations.length ? `violates PodSecurity "restricted:latest": ${violations.join(', ')}` : undefined;
}
