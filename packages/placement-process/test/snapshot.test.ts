// A workspace made inside a sandbox (modes, symlinks, empty directories, binary data) snapshots and
// restores into a fresh sandbox byte for byte, and snapshots back to the same address.
import { execFileSync } from 'node:child_process';
import { snapshotAddress, utf8 } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { layout, listRecords } from '../src/sandbox-state.js';
import { archiveWorkspace } from '../src/workspace-archive.js';
import { onlyReadableDirectories } from '../src/workspace-directories.js';
import { makeDriver, requireBwrap } from './helpers.js';

const labels = (runId: string) => ({ tenant: 'snap', runId, kind: 'sandbox' });

describe('snapshot → restore', () => {
  it('reproduces the workspace byte for byte in a fresh sandbox', async () => {
    requireBwrap();
    const driver = makeDriver();
    const a = await driver.provision({ labels: labels('a') });
    const build = [
      'mkdir -p src/deep/er empty && chmod 700 src/deep',
      'printf "#!/bin/sh\\necho run\\n" > run.sh && chmod 755 run.sh',
      'head -c 5000 /dev/urandom > src/deep/er/blob.bin && chmod 600 src/deep/er/blob.bin',
      'ln -s run.sh alias && ln -s ../../outside src/dangling',
      'echo ü > "src/ünï cödé.txt" && chmod 4755 run.sh',
    ].join(' && ');
    expect((await driver.exec(a, ['sh', '-c', build])).exitCode).toBe(0);
    const snap = await driver.snapshot(a);
    expect(snap.address).toBe(snapshotAddress(snap.bytes));

    const b = await driver.provision({ labels: labels('b') });
    await driver.restore(b, snap);
    expect((await driver.snapshot(b)).address).toBe(snap.address);
    const records = await listRecords(layout(driver.config.stateDir));
    const ws = (id: string) => records.find((r) => r.handle.id === id)!.workspace;
    const listing = (dir: string) =>
      execFileSync('find', ['.', '-printf', '%P %y %m %s %l\\n'], { cwd: dir, encoding: 'utf8' })
        .split('\n')
        .sort()
        .join('\n');
    expect(listing(ws(b.id))).toBe(listing(ws(a.id)));
    execFileSync('diff', ['-r', '--no-dereference', ws(a.id), ws(b.id)]);
    expect(utf8((await driver.exec(b, ['./alias'])).stdout)).toBe('run\n');
  });

  it('a workspace of only directories is archived without a sandbox, to the same bytes as the sandboxed tar', async () => {
    requireBwrap();
    const driver = makeDriver();
    const c = await driver.provision({ labels: labels('dirs-only') });
    const records = await listRecords(layout(driver.config.stateDir));
    const ws = records.find((r) => r.handle.id === c.id)!.workspace;
    const setup = {
      bwrap: driver.config.bwrap,
      user:
        process.getuid?.() === 0 ? { uid: driver.config.sandboxUid, gid: driver.config.sandboxGid } : null,
    };
    const owner = setup.user ? { uid: setup.user.uid } : null;
    for (const step of ['true', 'mkdir -p out', 'mkdir -p out/a/b empty && chmod 700 out/a']) {
      expect((await driver.exec(c, ['sh', '-c', step])).exitCode).toBe(0);
      expect(await onlyReadableDirectories(ws, owner)).toBe(true);
      const fast = await driver.snapshot(c);
      expect(Buffer.from(fast.bytes).equals(Buffer.from((await archiveWorkspace(setup, ws)).bytes))).toBe(
        true,
      );
    }
    // A file, a symlink, or a directory its owner cannot list: through the sandboxed tar, as before.
    expect((await driver.exec(c, ['sh', '-c', 'ln -s /etc out/link'])).exitCode).toBe(0);
    expect(await onlyReadableDirectories(ws, owner)).toBe(false);
    expect((await driver.exec(c, ['sh', '-c', 'rm out/link && chmod 300 out/a/b'])).exitCode).toBe(0);
    expect(await onlyReadableDirectories(ws, owner)).toBe(false);
    await expect(driver.snapshot(c)).rejects.toMatchObject({ code: 'spawn_failed' });
    expect((await driver.exec(c, ['sh', '-c', 'chmod 700 out/a/b && echo x > out/a/b/f'])).exitCode).toBe(0);
    expect(await onlyReadableDirectories(ws, owner)).toBe(false);
    expect((await driver.snapshot(c)).bytes).toEqual((await archiveWorkspace(setup, ws)).bytes);
    await driver.dispose(c);
  });
});
