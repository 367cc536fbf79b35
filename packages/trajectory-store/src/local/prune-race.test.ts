// A write racing the pruning of its directory: `delete` removes directories left empty (up to the tenant root),
// and a write into the same directory at the same moment must still land — the prune may take the directory away
// between the write's mkdir and its open any number of times, never for good.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { localBackend } from './local-backend.js';

const roots: string[] = [];
afterAll(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true });
});

it('writes into a directory that concurrent deletes keep pruning all land', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'trajectory-prune-'));
  roots.push(root);
  const backend = localBackend({ root });
  const key = (name: string) => ({ tenant: 't', path: `uploads/${name}` });
  const failures: unknown[] = [];
  // Four writers and four deleters on one directory (the control plane's staged uploads: each upload's staged
  // copy is deleted once its bytes were found stored), each deleter leaving it empty as often as it can.
  const writer = async (w: number) => {
    for (let i = 0; i < 150; i++) {
      const name = `w${w}-${i}`;
      await backend
        .putStream(
          key(name),
          (async function* () {
            yield new Uint8Array([w, i & 0xff]);
          })(),
        )
        .catch((e: unknown) => failures.push(e));
      await backend.delete(key(name));
    }
  };
  await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(writer));
  expect(failures).toEqual([]);
}, 60_000);
