// What happens to an object between a write request and the store, per kind: name and namespace rules,
// pod defaulting/validation, Pod Security, quota, and the fields a client may not change.
import type { ObjectStore } from './object-store.js';
import { podSecurityRefusal } from './pods/pod-security.js';
import { defaultPod, type PodSpec, validatePod } from './pods/pod-spec.js';
import { admitByQuota } from './quota.js';
import { findType, groupVersion, type ResourceType } from './resources.js';
import type { KubeObject } from './selectors.js';
import { errors } from './status.js';

const NAMESPACES = findType('', 'v1', 'namespaces') as ResourceType;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_KINDS = new Set(['Namespace', 'Service']);

function validateName(type: ResourceType, name: string): void {
  let problem: string | undefined;
  if (type.group === 'rbac.authorization.k8s.io') {
    if (name === '.' || name === '..' || /[/%]/.test(name))
      problem = 'may not contain "/" or "%", nor be "." or ".."';
  } else if (LABEL_KINDS.has(type.kind)) {
    if (!LABEL.test(name) || name.length > 63)
      problem =
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
  } else if (!SUBDOMAIN.test(name) || name.length > 253) {
    problem =
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
  }
  if (problem) {
    throw errors.invalid(type.kind, type.group, name, [
      {
        field: 'metadata.name',
        message: `Invalid value: "${name}": ${problem}`,
        reason: 'FieldValueInvalid',
      },
    ]);
  }
}

/** The body of a write, checked against the URL it was sent to, with `namespace` and `name` settled. */
export function objectFromBody(
  type: ResourceType,
  namespace: string | undefined,
  name: string | undefined,
  body: unknown,
): KubeObject {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw errors.badRequest('the request body must be an object');
  const object = structuredClone(body) as KubeObject;
  if (object.kind !== undefined && object.kind !== type.kind) {
    throw errors.badRequest(
      `the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${groupVersion(type)}) or kind ${String(object.kind)} is not ${type.kind}`,
    );
  }
  if (object.apiVersion !== undefined && object.apiVersion !== groupVersion(type)) {
    throw errors.badRequest(
      `the API version in the data (${String(object.apiVersion)}) does not match the expected API version (${groupVersion(type)})`,
    );
  }
  const metadata = (object.metadata ?? {}) as KubeObject['metadata'];
  object.metadata = metadata;
  if (type.namespaced) {
    if (metadata.namespace !== undefined && metadata.namespace !== '' && metadata.namespace !== namespace) {
      throw errors.badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    }
    metadata.namespace = namespace;
  } else delete metadata.namespace;
  if (!metadata.name && typeof metadata.generateName === 'string' && name === undefined) {
    metadata.name = `${metadata.generateName}${Math.random().toString(36).slice(2, 7)}`;
  }
  if (name !== undefined && metadata.name !== undefined && metadata.name !== name) {
    throw errors.badRequest(
      `the name of the object (${metadata.name}) does not match the name on the URL (${name})`,
    );
  }
  metadata.name ??= name as string;
  if (!metadata.name) {
    throw errors.invalid(type.kind, type.group, '', [
      {
        field: 'metadata.name',
        message: 'Required value: name or generateName is required',
        reason: 'FieldValueRequired',
      },
    ]);
  }
  validateName(type, metadata.name);
  decodeMicroTimes(type, object);
  return object;
}

/** Go's RFC3339Micro layout, which metav1.MicroTime parses with exactly six fractional digits. */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;
const MICRO_TIME_FIELDS: Record<string, readonly string[]> = { Lease: ['acquireTime', 'renewTime'] };

/**
 * The apiserver decodes a body into its Go type before anything else: a metav1.MicroTime field
 * (`Lease.spec.renewTime`, `acquireTime`) that is not RFC3339 with exactly six fractional digits — a
 * JavaScript `Date`'s `toISOString()` has three — fails that decode with 400 BadRequest.
 */
function decodeMicroTimes(type: ResourceType, object: KubeObject): void {
  const spec = object.spec as Record<string, unknown> | undefined;
  for (const field of MICRO_TIME_FIELDS[type.kind] ?? []) {
    const value = spec?.[field];
    if (value === undefined || value === null) continue;
    if (typeof value === 'string' && MICRO_TIME.test(value)) continue;
    const text = String(value);
    const fraction = /\.\d*.*$/.exec(text.slice(19))?.[0] ?? text.slice(19);
    throw errors.badRequest(
      `${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: parsing time "${text}" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "${fraction}" as ".000000"`,
    );
  }
}

/** The admission chain of a create; returns the object to store. */
export function admitCreate(store: ObjectStore, type: ResourceType, object: KubeObject): KubeObject {
  const namespace = object.metadata.namespace;
  const target = { group: type.group, resource: type.resource, name: object.metadata.name };
  let ns: KubeObject | undefined;
  if (type.namespaced) {
    ns = store.get(NAMESPACES, undefined, namespace ?? '');
    if (!ns) throw errors.notFound({ group: '', resource: 'namespaces', name: namespace });
    if ((ns.status as { phase?: string } | undefined)?.phase === 'Terminating') {
      throw errors.forbidden(
        target,
        `unable to create new content in namespace ${namespace} because it is being terminated`,
      );
    }
  }
  delete object.metadata.resourceVersion;
  delete object.metadata.uid;
  delete object.metadata.deletionTimestamp;
  if (type.kind === 'Pod') {
    validatePod(object);
    defaultPod(object);
    const refusal = podSecurityRefusal(ns, object);
    if (refusal) throw errors.forbidden(target, refusal);
  }
  if (type.kind === 'Namespace') {
    object.spec = { finalizers: ['kubernetes'] };
    object.status = { phase: 'Active' };
    object.metadata.labels = {
      ...(object.metadata.labels ?? {}),
      'kubernetes.io/metadata.name': object.metadata.name,
    };
  }
  foldStringData(type, object);
  if (type.namespaced) admitByQuota(store, type, object);
  return object;
}

/** A Secret's `stringData` is write-only: the apiserver folds it into base64 `data`. */
export function foldStringData(type: ResourceType, object: KubeObject): void {
  if (type.kind !== 'Secret' || object.stringData === undefined) return;
  const data = { ...((object.data as Record<string, string> | undefined) ?? {}) };
  for (const [key, value] of Object.entries(object.stringData as Record<string, string>)) {
    data[key] = Buffer.from(String(value)).toString('base64');
  }
  object.data = data;
  delete object.stringData;
}

/** An update of a pod may change only its images and activeDeadlineSeconds (its spec is otherwise immutable). */
export function admitUpdate(type: ResourceType, current: KubeObject, next: KubeObject): void {
  foldStringData(type, next);
  if (type.subresources?.includes('status')) next.status = current.status;
  if (type.kind === 'Namespace') next.spec = current.spec;
  if (type.kind !== 'Pod') return;
  const comparable = (spec: PodSpec) => ({
    ...spec,
    activeDeadlineSeconds: undefined,
    containers: spec.containers.map((c) => ({ ...c, image: undefined })),
  });
  const before = canonical(comparable(current.spec as PodSpec));
  const after = canonical(comparable(next.spec as PodSpec));
  if (before !== after) {
    throw errors.invalid('Pod', '', current.metadata.name, [
      {
        field: 'spec',
        message:
          'Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.activeDeadlineSeconds`',
        reason: 'FieldValueForbidden',
      },
    ]);
  }
}

/** JSON with object keys sorted, so two equal values compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}
