// The store's watch semantics, as a property: for any sequence of creates, updates and deletes, a watch
// resumed from any version still in history sees exactly the changes after it, in order; one older than the
// history is refused 410 Expired; a label-filtered watch sees objects enter (ADDED) and leave (DELETED).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ObjectStore, type WatchEvent } from './object-store.js';
import { findType, type ResourceType } from './resources.js';
import { parseLabelSelector } from './selectors.js';
import { StatusError } from './status.js';

const CONFIGMAPS = findType('', 'v1', 'configmaps') as ResourceType;
const all = { type: CONFIGMAPS, namespace: 'ns', matches: () => true };

type Op = { kind: 'create' | 'update' | 'delete'; name: string; color: string };
const op = fc.record({
  kind: fc.constantFrom('create', 'update', 'delete') as fc.Arbitrary<Op['kind']>,
  name: fc.constantFrom('a', 'b', 'c', 'd'),
  color: fc.constantFrom('red', 'blue'),
});

/** Apply the ops that are valid in the current state; return every change with its resourceVersion. */
function apply(store: ObjectStore, ops: Op[]): { type: string; name: string; rv: string }[] {
  const log: { type: string; name: string; rv: string }[] = [];
  for (const o of ops) {
    const current = store.get(CONFIGMAPS, 'ns', o.name);
    if (o.kind === 'create' && !current) {
      const made = store.create(CONFIGMAPS, {
        metadata: { name: o.name, namespace: 'ns', labels: { color: o.color } },
      });
      log.push({ type: 'ADDED', name: o.name, rv: String(made.metadata.resourceVersion) });
    } else if (o.kind === 'update' && current) {
      const next = store.update(CONFIGMAPS, {
        ...current,
        metadata: { ...current.metadata, labels: { color: o.color } },
      });
      log.push({ type: 'MODIFIED', name: o.name, rv: String(next.metadata.resourceVersion) });
    } else if (o.kind === 'delete' && current) {
      const gone = store.remove(CONFIGMAPS, 'ns', o.name);
      log.push({ type: 'DELETED', name: o.name, rv: String(gone.metadata.resourceVersion) });
    }
  }
  return log;
}

describe('ObjectStore watch', () => {
  it('resumes from any version in history with exactly the later changes, in order', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), fc.nat(), (ops, pick) => {
        const store = new ObjectStore(1000);
        const log = apply(store, ops);
        const from = log.length === 0 ? '1' : (log[pick % log.length] as { rv: string }).rv;
        const seen: WatchEvent[] = [];
        store.watch(all, from, (e) => seen.push(e));
        const expected = log.filter((e) => Number(e.rv) > Number(from));
        expect(seen.map((e) => [e.type, e.object.metadata.name, e.object.metadata.resourceVersion])).toEqual(
          expected.map((e) => [e.type, e.name, e.rv]),
        );
      }),
    );
  });

  it('refuses a version older than the kept history with 410 Expired', () => {
    fc.assert(
      fc.property(
        fc.array(op, { minLength: 10, maxLength: 60 }),
        fc.integer({ min: 1, max: 5 }),
        (ops, limit) => {
          const store = new ObjectStore(limit);
          const log = apply(store, ops);
          fc.pre(log.length - limit - 1 >= 1); // the newest dropped change is not the first (version "0" means "now")
          const dropped = log[log.length - limit - 1] as { rv: string };
          let error: unknown;
          try {
            store.watch(all, String(Number(dropped.rv) - 1), () => {});
          } catch (e) {
            error = e;
          }
          expect(error).toBeInstanceOf(StatusError);
          expect((error as StatusError).status).toMatchObject({ code: 410, reason: 'Expired' });
          const kept = log[log.length - limit] as { rv: string };
          expect(() => store.watch(all, kept.rv, () => {})).not.toThrow();
        },
      ),
    );
  });

  it('delivers live changes, and a selector sees objects enter and leave it', () => {
    const store = new ObjectStore(100);
    const red: WatchEvent[] = [];
    store.watch({ ...all, matches: parseLabelSelector('color=red') }, store.resourceVersion, (e) =>
      red.push(e),
    );
    apply(store, [
      { kind: 'create', name: 'a', color: 'blue' },
      { kind: 'update', name: 'a', color: 'red' },
      { kind: 'update', name: 'a', color: 'red' },
      { kind: 'update', name: 'a', color: 'blue' },
      { kind: 'create', name: 'b', color: 'red' },
      { kind: 'delete', name: 'b', color: 'red' },
    ]);
    expect(red.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
      'ADDED a',
      'MODIFIED a',
      'DELETED a',
      'ADDED b',
      'DELETED b',
    ]);
  });
});
