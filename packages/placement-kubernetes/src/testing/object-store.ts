// The server's etcd: every object of every kind under one resourceVersion counter, a bounded history of
// changes for watches to resume from (older versions answer 410 Expired, as a compacted etcd does), and
// live fan-out to watchers.
import { randomUUID } from 'node:crypto';
import type { ResourceType } from './resources.js';
import { groupVersion } from './resources.js';
import type { KubeObject, Matcher } from './selectors.js';
import { errors } from './status.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: EventType;
  rv: number;
  typeKey: string;
  namespace: string | undefined;
  object: KubeObject;
  previous: KubeObject | undefined;
}

export interface WatchFilter {
  type: ResourceType;
  namespace: string | undefined;
  matches: Matcher;
}

export type WatchEvent = { type: EventType; object: KubeObject };

interface Watcher extends WatchFilter {
  deliver(event: WatchEvent): void;
}

const typeKey = (t: ResourceType) => `${t.group}/${t.resource}`;
const objectKey = (t: ResourceType, namespace: string | undefined, name: string) =>
  `${typeKey(t)}/${namespace ?? ''}/${name}`;

export class ObjectStore {
  private revision = 0;
  private readonly objects = new Map<string, KubeObject>();
  private readonly history: StoreEvent[] = [];
  private compactedThrough = 0;
  private readonly watchers = new Set<Watcher>();

  constructor(private readonly historyLimit: number) {}

  get resourceVersion(): string {
    return String(this.revision);
  }

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.objects.get(objectKey(type, namespace, name));
    return found ? structuredClone(found) : undefined;
  }

  /** Objects of a type (in one namespace, or all), in key order, after `after` when paging. */
  list(type: ResourceType, namespace: string | undefined, matches: Matcher): KubeObject[] {
    const prefix = namespace === undefined ? `${typeKey(type)}/` : `${typeKey(type)}/${namespace}/`;
    const keys = [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
    const out: KubeObject[] = [];
    for (const key of keys) {
      const object = this.objects.get(key) as KubeObject;
      if (matches(object)) out.push(structuredClone(object));
    }
    return out;
  }

  create(type: ResourceType, object: KubeObject): KubeObject {
    const { name, namespace } = object.metadata;
    const key = objectKey(type, namespace, name);
    if (this.objects.has(key))
      throw errors.alreadyExists({ group: type.group, resource: type.resource, name });
    const stored = structuredClone(object);
    stored.apiVersion = groupVersion(type);
    stored.kind = type.kind;
    stored.metadata = {
      ...stored.metadata,
      uid: randomUUID(),
      creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      ...(type.kind === 'Pod' ? {} : { generation: 1 }),
    };
    return this.commit(type, key, 'ADDED', stored, undefined);
  }

  /** Replace a stored object; a stale `metadata.resourceVersion` is a 409 Conflict. */
  update(type: ResourceType, object: KubeObject): KubeObject {
    const { name, namespace } = object.metadata;
    const key = objectKey(type, namespace, name);
    const current = this.objects.get(key);
    if (!current) throw errors.notFound({ group: type.group, resource: type.resource, name });
    const expected = object.metadata.resourceVersion;
    if (expected !== undefined && expected !== '' && expected !== current.metadata.resourceVersion) {
      throw errors.conflict(
        { group: type.group, resource: type.resource, name },
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    const next = structuredClone(object);
    next.apiVersion = groupVersion(type);
    next.kind = type.kind;
    next.metadata = {
      ...next.metadata,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
    };
    if (typeof current.metadata.generation === 'number') {
      const specChanged = JSON.stringify(withoutMeta(current)) !== JSON.stringify(withoutMeta(next));
      next.metadata.generation = current.metadata.generation + (specChanged ? 1 : 0);
    }
    return this.commit(type, key, 'MODIFIED', next, current);
  }

  remove(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const key = objectKey(type, namespace, name);
    const current = this.objects.get(key);
    if (!current) throw errors.notFound({ group: type.group, resource: type.resource, name });
    return this.commit(type, key, 'DELETED', structuredClone(current), current);
  }

  /**
   * Deliver the changes after `fromRv` (from history), then live ones. `undefined` / "0" start with a
   * synthetic ADDED for every current object, as the apiserver does. A version older than the history
   * throws 410 Expired.
   */
  watch(filter: WatchFilter, fromRv: string | undefined, deliver: (e: WatchEvent) => void): () => void {
    const watcher: Watcher = { ...filter, deliver };
    if (fromRv === undefined || fromRv === '' || fromRv === '0') {
      for (const object of this.list(filter.type, filter.namespace, filter.matches)) {
        deliver({ type: 'ADDED', object });
      }
    } else {
      const from = Number(fromRv);
      if (!Number.isSafeInteger(from) || from < 0)
        throw errors.badRequest(`invalid resource version: ${fromRv}`);
      if (from < this.compactedThrough) {
        throw errors.expired(`too old resource version: ${from} (${this.compactedThrough + 1})`);
      }
      for (const event of this.history) {
        if (event.rv > from) this.offer(watcher, event);
      }
    }
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /** Drop all history, as an etcd compaction does: every watch from an older version now gets 410. */
  compact(): void {
    this.compactedThrough = this.revision;
    this.history.length = 0;
  }

  private commit(
    type: ResourceType,
    key: string,
    eventType: EventType,
    object: KubeObject,
    previous: KubeObject | undefined,
  ): KubeObject {
    this.revision += 1;
    object.metadata.resourceVersion = String(this.revision);
    if (eventType === 'DELETED') this.objects.delete(key);
    else this.objects.set(key, object);
    const event: StoreEvent = {
      type: eventType,
      rv: this.revision,
      typeKey: typeKey(type),
      namespace: object.metadata.namespace,
      object,
      previous,
    };
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.shift() as StoreEvent;
      this.compactedThrough = dropped.rv;
    }
    for (const watcher of this.watchers) this.offer(watcher, event);
    return structuredClone(object);
  }

  /** A label- or field-filtered watch sees an object leave its selection as DELETED, enter it as ADDED. */
  private offer(watcher: Watcher, event: StoreEvent): void {
    if (event.typeKey !== typeKey(watcher.type)) return;
    if (watcher.namespace !== undefined && event.namespace !== watcher.namespace) return;
    const now = event.type !== 'DELETED' && watcher.matches(event.object);
    const before = event.previous !== undefined && watcher.matches(event.previous);
    let type: EventType | undefined;
    if (event.type === 'DELETED') type = before ? 'DELETED' : undefined;
    else if (now) type = before || event.type === 'ADDED' ? event.type : 'ADDED';
    else if (before) type = 'DELETED';
    if (type) watcher.deliver({ type, object: structuredClone(event.object) });
  }
}

function withoutMeta(object: KubeObject): unknown {
  const { metadata: _m, status: _s, ...rest } = object;
  return rest;
}
