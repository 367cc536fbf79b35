// A spec's `directories`, made on the host by the driver (root, when it runs as root) before any command:
// owned by the sandbox user, and never through a symlink a seeding snapshot put in the workspace — that
// would have root make a directory (the sandbox user's) anywhere on the host.
import { existsSync, lstatSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { refusal } from '@everdict/placement/contract';
import { beforeAll, expect, it } from 'vitest';
import { layout, readRecord } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

const driver = makeDriver();
let seq = 0;
const labels = () => ({ tenant: 'dirs', runId: `dirs-${++seq}`, kind: 'command' as const });

beforeAll(() => {
  requireBwrap();
});

it("makes them owned by the sandbox user, 0755, in the sandbox's own workspace", async () => {
  const h = await driver.provision({ labels: labels(), directories: ['out', 'a/b'] });
  const record = await readRecord(layout(driver.config.stateDir), h.id);
  const uid = process.getuid?.() === 0 ? driver.config.sandboxUid : process.getuid?.();
  for (const p of ['out', 'a', 'a/b']) {
    const st = lstatSync(join(record!.workspace, p));
    expect(st.isDirectory(), p).toBe(true);
    expect(st.uid, p).toBe(uid);
    expect(st.mode & 0o722, p).toBe(0o700); // the sandbox's to write, nobody else's
  }
  // the command's own `out/` needs no mkdir of its own: it writes there at once
  expect((await driver.exec(h, ['sh', '-c', 'echo hi > out/x && echo hi > a/b/y'])).exitCode).toBe(0);
  await driver.dispose(h);
});

it('refuses a path through a symlink a seeding snapshot holds, making nothing where it points', async () => {
  const host = join(tempDir('everdict-pd-target-'), 'target');
  mkdirSync(host, { mode: 0o777 });
  const a = await driver.provision({ labels: labels() });
  expect((await driver.exec(a, ['ln', '-s', host, 'out'])).exitCode).toBe(0);
  expect((await driver.exec(a, ['ln', '-s', `${host}/made`, 'dangling'])).exitCode).toBe(0);
  const snap = await driver.snapshot(a);
  await driver.dispose(a);
  const free = (await driver.capacity()).slotsFree;
  await refusal(
    driver.provision({ labels: labels(), workspace: snap, directories: ['out/x'] }),
    'spawn_failed',
  );
  await refusal(
    driver.provision({ labels: labels(), workspace: snap, directories: ['dangling'] }),
    'spawn_failed',
  );
  expect(existsSync(join(host, 'x'))).toBe(false);
  expect(existsSync(join(host, 'made'))).toBe(false);
  expect((await driver.capacity()).slotsFree).toBe(free);
});

// Dispose removes the directories it made straight away (rmdir, deepest first) — only the workspace's own
// entries: a command can swap a parent for a symlink, and rmdir follows a path's inner symlinks.
it('dispose removes what it made without following a symlink a command put in their place', async () => {
  const host = tempDir('everdict-pd-target-');
  for (const p of ['out', 'a', 'a/b']) mkdirSync(join(host, p), { mode: 0o777 });
  const h = await driver.provision({ labels: labels(), directories: ['out', 'a/b'] });
  const record = await readRecord(layout(driver.config.stateDir), h.id);
  const swap = `rmdir out a/b a && ln -s ${host}/out out && ln -s ${host}/a a`;
  expect((await driver.exec(h, ['sh', '-c', swap])).exitCode).toBe(0);
  await driver.dispose(h);
  expect(existsSync(record!.workspace)).toBe(false);
  for (const p of ['out', 'a', 'a/b']) expect(lstatSync(join(host, p)).isDirectory(), p).toBe(true);
});

it('dispose removes the log another instance wrote into a sandbox this one made', async () => {
  const h = await driver.provision({ labels: labels(), directories: ['out'] });
  const record = await readRecord(layout(driver.config.stateDir), h.id);
  const other = makeDriver({ stateDir: driver.config.stateDir });
  expect((await other.exec(JSON.parse(JSON.stringify(h)), ['echo', 'printed'])).exitCode).toBe(0);
  expect(existsSync(record!.log)).toBe(true);
  expect((await driver.exec(h, ['true'])).exitCode).toBe(0);
  await driver.dispose(h);
  expect(existsSync(record!.log)).toBe(false);
  expect(existsSync(record!.workspace)).toBe(false);
});
