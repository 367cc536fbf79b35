// The patch types kubectl and clients send, on the shapes they are sent for.
import { describe, expect, it } from 'vitest';
import { type Json, jsonPatch, mergePatch, strategicMergePatch } from './patch.js';

const deployment: Json = {
  spec: {
    template: {
      spec: {
        containers: [
          {
            name: 'app',
            image: 'app:1',
            env: [
              { name: 'A', value: '1' },
              { name: 'B', value: '2' },
            ],
          },
          { name: 'sidecar', image: 'side:1' },
        ],
      },
    },
  },
};

describe('patches', () => {
  it("strategic merge: merges containers and env by name, honours $setElementOrder and $patch: delete (kubectl apply's shape)", () => {
    const patched = strategicMergePatch(deployment, {
      spec: {
        template: {
          spec: {
            '$setElementOrder/containers': [{ name: 'sidecar' }, { name: 'app' }],
            containers: [
              {
                name: 'app',
                image: 'app:2',
                '$setElementOrder/env': [{ name: 'B' }, { name: 'A' }],
                env: [{ name: 'B', value: '3' }],
              },
              { name: 'sidecar', $patch: 'delete' },
            ],
          },
        },
      },
    } as never);
    expect(patched).toEqual({
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'app',
                image: 'app:2',
                env: [
                  { name: 'B', value: '3' },
                  { name: 'A', value: '1' },
                ],
              },
            ],
          },
        },
      },
    });
  });

  it('strategic merge: replaces lists without a merge key, and deletes keys set to null', () => {
    expect(
      strategicMergePatch(
        { rules: [{ verbs: ['get'] }], keep: 1, drop: 2 },
        { rules: [{ verbs: ['list'] }], drop: null },
      ),
    ).toEqual({
      rules: [{ verbs: ['list'] }],
      keep: 1,
    });
    expect(
      strategicMergePatch({ metadata: { finalizers: ['a'] } }, { metadata: { finalizers: ['b'] } }),
    ).toEqual({ metadata: { finalizers: ['a', 'b'] } });
  });

  it('JSON merge patch (RFC 7386) and JSON patch (RFC 6902)', () => {
    expect(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { c: null, d: 3 }, l: [3] })).toEqual({
      a: { b: 1, d: 3 },
      l: [3],
    });
    expect(
      jsonPatch({ metadata: { labels: { a: '1' } }, spec: { list: [1, 2] } }, [
        { op: 'add', path: '/metadata/labels/b', value: '2' },
        { op: 'remove', path: '/metadata/labels/a' },
        { op: 'replace', path: '/spec/list/0', value: 9 },
        { op: 'add', path: '/spec/list/-', value: 3 },
        { op: 'test', path: '/spec/list/1', value: 2 },
      ]),
    ).toEqual({ metadata: { labels: { b: '2' } }, spec: { list: [9, 2, 3] } });
    expect(() => jsonPatch({ a: 1 }, [{ op: 'test', path: '/a', value: 2 }])).toThrow(
      /test operation failed/,
    );
  });
});
