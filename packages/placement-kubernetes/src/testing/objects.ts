// The verbs on a resource URL: list / watch / get / create / update / patch / delete / deletecollection.
// Pods are handed to the kubelet after they are stored and deleted through it; namespaces terminate their
// content before they go; quotas are recounted after every change that can move them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { admitCreate, admitUpdate, objectFromBody } from './admission.js';
import { type Query, readBody, readJson, sendJson, TABLE_CONTENT_TYPE, wantsTable } from './http.js';
import type { ObjectStore } from './object-store.js';
import { type Json, jsonPatch, mergePatch, strategicMergePatch } from './patch.js';
import type { Kubelet } from './pods/kubelet.js';
import { refreshQuotaStatus } from './quota.js';
import { findType, groupVersion, RESOURCE_TYPES, type ResourceType } from './resources.js';
import type { ResourceRoute } from './routes.js';
import { type KubeObject, parseFieldSelector, parseLabelSelector } from './selectors.js';
import { type ApiStatus, deleted, errors } from './status.js';
import { toTable } from './table.js';
import { type OpenWatch, serveWatch } from './watch-stream.js';

const NAMESPACES = findType('', 'v1', 'namespaces') as ResourceType;
const PODS = findType('', 'v1', 'pods') as ResourceType;

export interface ObjectContext {
  store: ObjectStore;
  kubelet: Kubelet;
  watches: Set<OpenWatch>;
  bookmarkIntervalMs: number;
  /** Every new watch answers this Status as an ERROR event and ends (fault injection). */
  failWatch?: ApiStatus | undefined;
}

export async function handleObjects(
  ctx: ObjectContext,
  route: ResourceRoute,
  req: IncomingMessage,
  res: ServerResponse,
  query: Query,
): Promise<void> {
  const { type, namespace, name } = route;
  const method = req.method ?? 'GET';
  if (name === undefined) {
    if (method === 'GET' && query.flag('watch')) return watch(ctx, route, req, res, query);
    if (method === 'GET') return list(ctx, route, req, res, query);
    if (method === 'POST') return create(ctx, type, namespace, req, res, query);
    if (method === 'DELETE') return deleteCollection(ctx, route, res, query);
    throw errors.methodNotAllowed();
  }
  const target = { group: type.group, resource: type.resource, name };
  if (method === 'GET') {
    const object = ctx.store.get(type, namespace, name);
    if (!object) throw errors.notFound(target);
    if (wantsTable(req)) return sendJson(res, 200, tableOf(ctx, type, [object], query), TABLE_CONTENT_TYPE);
    return sendJson(res, 200, object);
  }
  if (method === 'PUT') return update(ctx, route, name, await readJson(req), res, query);
  if (method === 'PATCH') return patch(ctx, route, name, req, res, query);
  if (method === 'DELETE') return remove(ctx, type, namespace, name, await readJson(req), res, query);
  throw errors.methodNotAllowed();
}

function tableOf(ctx: ObjectContext, type: ResourceType, objects: KubeObject[], query: Query) {
  return toTable(type, objects, ctx.store.resourceVersion, query.get('includeObject'));
}

function filterOf(route: ResourceRoute, query: Query) {
  const labels = parseLabelSelector(query.get('labelSelector'));
  const fields = parseFieldSelector(query.get('fieldSelector'));
  return { type: route.type, namespace: route.namespace, matches: (o: KubeObject) => labels(o) && fields(o) };
}

async function list(
  ctx: ObjectContext,
  route: ResourceRoute,
  req: IncomingMessage,
  res: ServerResponse,
  query: Query,
): Promise<void> {
  const filter = filterOf(route, query);
  let items = ctx.store.list(route.type, route.namespace, filter.matches);
  const resourceVersion = ctx.store.resourceVersion;
  const metadata: Record<string, unknown> = { resourceVersion };
  const token = query.get('continue');
  if (token) {
    const after = Buffer.from(token, 'base64url').toString('utf8');
    items = items.filter((o) => `${o.metadata.namespace ?? ''}/${o.metadata.name}` > after);
  }
  const limit = query.int('limit');
  if (limit !== undefined && limit > 0 && items.length > limit) {
    const last = items[limit - 1] as KubeObject;
    metadata.continue = Buffer.from(`${last.metadata.namespace ?? ''}/${last.metadata.name}`).toString(
      'base64url',
    );
    metadata.remainingItemCount = items.length - limit;
    items = items.slice(0, limit);
  }
  if (wantsTable(req)) {
    const table = tableOf(ctx, route.type, items, query);
    return sendJson(res, 200, { ...table, metadata }, TABLE_CONTENT_TYPE);
  }
  sendJson(res, 200, {
    kind: `${route.type.kind}List`,
    apiVersion: groupVersion(route.type),
    metadata,
    items: items.map(({ kind: _k, apiVersion: _a, ...rest }) => rest),
  });
}

function watch(
  ctx: ObjectContext,
  route: ResourceRoute,
  req: IncomingMessage,
  res: ServerResponse,
  query: Query,
): void {
  serveWatch(
    req,
    res,
    ctx.store,
    filterOf(route, query),
    {
      fromResourceVersion: query.get('resourceVersion') ?? undefined,
      bookmarks: query.flag('allowWatchBookmarks'),
      bookmarkIntervalMs: ctx.bookmarkIntervalMs,
      timeoutSeconds: query.int('timeoutSeconds'),
      table: wantsTable(req),
      includeObject: query.get('includeObject'),
      failWith: ctx.failWatch,
    },
    ctx.watches,
  );
}

function changed(ctx: ObjectContext, type: ResourceType, namespace: string | undefined): void {
  if (namespace !== undefined && (type.kind === 'Pod' || type.kind === 'ResourceQuota' || type.namespaced)) {
    refreshQuotaStatus(ctx.store, namespace);
  }
}

async function create(
  ctx: ObjectContext,
  type: ResourceType,
  namespace: string | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  query: Query,
): Promise<void> {
  const object = admitCreate(
    ctx.store,
    type,
    objectFromBody(type, namespace, undefined, await readJson(req)),
  );
  if (query.get('dryRun') === 'All')
    return sendJson(res, 201, { ...object, apiVersion: groupVersion(type), kind: type.kind });
  const stored = ctx.store.create(type, object);
  if (type.kind === 'Pod') ctx.kubelet.admit(stored);
  changed(ctx, type, namespace);
  sendJson(res, 201, stored);
}

function store(
  ctx: ObjectContext,
  route: ResourceRoute,
  current: KubeObject,
  next: KubeObject,
  res: ServerResponse,
  query: Query,
): void {
  admitUpdate(route.type, current, next);
  if (query.get('dryRun') === 'All') {
    sendJson(res, 200, next);
    return;
  }
  const updated = ctx.store.update(route.type, next);
  changed(ctx, route.type, route.namespace);
  sendJson(res, 200, updated);
}

async function update(
  ctx: ObjectContext,
  route: ResourceRoute,
  name: string,
  body: unknown,
  res: ServerResponse,
  query: Query,
): Promise<void> {
  const current = ctx.store.get(route.type, route.namespace, name);
  if (!current) throw errors.notFound({ group: route.type.group, resource: route.type.resource, name });
  const next = objectFromBody(route.type, route.namespace, name, body);
  store(ctx, route, current, next, res, query);
}

async function patch(
  ctx: ObjectContext,
  route: ResourceRoute,
  name: string,
  req: IncomingMessage,
  res: ServerResponse,
  query: Query,
): Promise<void> {
  const current = ctx.store.get(route.type, route.namespace, name);
  if (!current) throw errors.notFound({ group: route.type.group, resource: route.type.resource, name });
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
  const raw = (await readBody(req)).toString('utf8');
  let body: Json;
  try {
    body = JSON.parse(raw) as Json;
  } catch {
    throw errors.badRequest('the body of the request was not valid JSON');
  }
  const base = current as unknown as Json;
  let result: Json;
  if (contentType === 'application/merge-patch+json') result = mergePatch(base, body);
  else if (contentType === 'application/strategic-merge-patch+json') result = strategicMergePatch(base, body);
  else if (contentType === 'application/json-patch+json') result = jsonPatch(base, body);
  else throw errors.unsupportedMediaType(contentType);
  // the patched object keeps the current resourceVersion unless the patch names one (a precondition)
  store(ctx, route, current, objectFromBody(route.type, route.namespace, name, result), res, query);
}

interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
}

async function remove(
  ctx: ObjectContext,
  type: ResourceType,
  namespace: string | undefined,
  name: string,
  body: unknown,
  res: ServerResponse,
  query: Query,
): Promise<void> {
  const options = (body && typeof body === 'object' ? body : {}) as DeleteOptions;
  const grace = query.int('gracePeriodSeconds') ?? options.gracePeriodSeconds;
  const current = ctx.store.get(type, namespace, name);
  const target = { group: type.group, resource: type.resource, name };
  if (!current) throw errors.notFound(target);
  const pre = options.preconditions;
  if (
    (pre?.uid && pre.uid !== current.metadata.uid) ||
    (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion)
  ) {
    throw errors.conflict(target, 'Precondition failed: the object has been modified');
  }
  if (query.get('dryRun') === 'All') return sendJson(res, 200, current);
  if (type.kind === 'Pod') return sendJson(res, 200, ctx.kubelet.delete(namespace ?? 'default', name, grace));
  if (type.kind === 'Namespace') return sendJson(res, 200, terminateNamespace(ctx, current));
  const removed = ctx.store.remove(type, namespace, name);
  changed(ctx, type, namespace);
  sendJson(res, 200, deleted(target, String(removed.metadata.uid)));
}

async function deleteCollection(
  ctx: ObjectContext,
  route: ResourceRoute,
  res: ServerResponse,
  query: Query,
): Promise<void> {
  const filter = filterOf(route, query);
  const items = ctx.store.list(route.type, route.namespace, filter.matches);
  const grace = query.int('gracePeriodSeconds');
  const out: KubeObject[] = [];
  for (const o of items) {
    const ns = o.metadata.namespace;
    if (route.type.kind === 'Pod') out.push(ctx.kubelet.delete(ns ?? 'default', o.metadata.name, grace));
    else if (route.type.kind === 'Namespace') out.push(terminateNamespace(ctx, o));
    else out.push(ctx.store.remove(route.type, ns, o.metadata.name));
  }
  if (route.namespace !== undefined) changed(ctx, route.type, route.namespace);
  sendJson(res, 200, {
    kind: `${route.type.kind}List`,
    apiVersion: groupVersion(route.type),
    metadata: {},
    items: out,
  });
}

/** Mark a namespace Terminating, delete everything in it, then remove it (the namespace controller's job). */
function terminateNamespace(ctx: ObjectContext, namespace: KubeObject): KubeObject {
  const name = namespace.metadata.name;
  if ((namespace.status as { phase?: string } | undefined)?.phase === 'Terminating') return namespace;
  const marked = ctx.store.update(NAMESPACES, {
    ...namespace,
    metadata: { ...namespace.metadata, deletionTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
    status: { phase: 'Terminating' },
  });
  setImmediate(() => {
    for (const type of RESOURCE_TYPES) {
      if (!type.namespaced) continue;
      for (const o of ctx.store.list(type, name, () => true)) {
        if (type === PODS) ctx.kubelet.delete(name, o.metadata.name, 0);
        else ctx.store.remove(type, name, o.metadata.name);
      }
    }
    if (ctx.store.get(NAMESPACES, undefined, name)) ctx.store.remove(NAMESPACES, undefined, name);
  });
  return marked;
}
