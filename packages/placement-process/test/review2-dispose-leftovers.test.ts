// A restore that raced a running command can leave the old workspace beside the new one
// (`.<workspace>.old-<tag>`: restoreDirectory swaps the new one in either way, and what the command kept
// adding to the old one stays). Only `reap` removed such leftovers, and reap skips a sandbox whose owner is
// alive: a dispose left it on disk for good. A sandbox's dispose must leave nothing of it. The leftover is
// made here directly (what that race leaves, without waiting for the race to happen), after a real restore.
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessDriver } from '../src/process-driver.js';
import { layout, readRecord } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

const labels = (runId: string) => ({ tenant: 'review2', runId, kind: 'sandbox' });

/** Puts what a raced restore leaves beside `workspace`: an old workspace with files and a symlink to `host`. */
function leaveOldWorkspace(workspace: string, host: string): void {
  const old = join(dirname(workspace), `.${basename(workspace)}.old-0123456789ab`);
  mkdirSync(join(old, 'a', 'b'), { recursive: true });
  writeFileSync(join(old, 'a', 'b', 'f'), 'kept adding\n');
  symlinkSync(host, join(old, 'a', 'host'));
}

describe('dispose after a restore that raced a command', () => {
  it('removes the restore leftovers beside the workspace, and nothing they point to', async () => {
    requireBwrap();
    const driver = makeDriver({ readyPool: 0 });
    const host = tempDir('everdict-host-');
    writeFileSync(join(host, 'precious'), 'host file\n');
    const workspaces = layout(driver.config.stateDir).workspaces;
    const empty = await driver.provision({ labels: labels('empty') });
    const snapshot = await driver.snapshot(empty);
    await driver.dispose(empty);

    // held by this driver (made here)
    const box = await driver.provision({ labels: labels('held') });
    await driver.restore(box, snapshot);
    leaveOldWorkspace((await readRecord(layout(driver.config.stateDir), box.id))!.workspace, host);
    await driver.dispose(box);
    expect(readdirSync(workspaces)).toEqual([]);

    // disposed by another instance on the same state directory (it holds only the label file)
    const other = await driver.provision({ labels: labels('other') });
    await driver.restore(other, snapshot);
    leaveOldWorkspace((await readRecord(layout(driver.config.stateDir), other.id))!.workspace, host);
    await new ProcessDriver(driver.config).dispose(other);
    expect(readdirSync(workspaces)).toEqual([]);
    expect(readdirSync(host)).toEqual(['precious']);
  }, 120_000);
});
