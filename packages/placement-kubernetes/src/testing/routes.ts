// Resource URLs: /api/v1/… and /apis/<group>/<version>/…, namespaced or cluster-scoped, with an optional
// object name and subresource.
import { findType, type ResourceType } from './resources.js';
import { errors } from './status.js';

export interface ResourceRoute {
  type: ResourceType;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

export function parseResourcePath(pathname: string): ResourceRoute | undefined {
  const segments = pathname
    .split('/')
    .filter((s) => s.length > 0)
    .map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (segments[0] === 'api' && segments.length >= 3) {
    group = '';
    version = segments[1] ?? '';
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 4) {
    group = segments[1] ?? '';
    version = segments[2] ?? '';
    rest = segments.slice(3);
  } else return undefined;

  let namespace: string | undefined;
  // namespaces/<ns>/<resource>/… addresses a namespaced resource; namespaces/<name>[/<sub>] the namespace
  if (rest[0] === 'namespaces' && rest.length >= 3 && findType(group, version, rest[2] ?? '')?.namespaced) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource = '', name, subresource, ...extra] = rest;
  const type = findType(group, version, resource);
  if (!type || extra.length > 0) return undefined;
  if (type.namespaced && namespace === undefined && name !== undefined) return undefined;
  if (!type.namespaced && namespace !== undefined) return undefined;
  if (subresource !== undefined && !(type.subresources ?? []).includes(subresource))
    throw errors.pathNotFound();
  return { type, namespace, name, subresource };
}
