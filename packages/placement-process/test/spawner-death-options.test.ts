// A spawner killed while bubblewrap waits to join the sandbox's cgroups: bubblewrap must not run the
// command. Its options (fd 6) are written only once it joined; before, they were written at once and the
// end of fd 6 waited for the join, so a spawner killed in between (SIGKILL, the OOM killer) closed fd 6 with
// every option in it — bubblewrap cloned its namespace init outside the sandbox's cgroups, and the command
// ran orphaned where dispose could not reach it (seen after CI: `bwrap … sleep 30` in no sandbox cgroup).
// Here the join is a FIFO no one opens, so the spawner waits in it for as long as the test likes.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { Spawner } from '../src/spawner/client.js';
import { hostArgvWith, requireBwrap, tempDir } from './helpers.js';

/** A process that is gone: no /proc entry, or a zombie not yet reaped by whoever inherited it. */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

describe.each(['auto', 'node'] as const)('a spawner killed before bubblewrap joined (%s)', (program) => {
  it('leaves bubblewrap no options: the command never runs', async () => {
    requireBwrap();
    const dir = tempDir();
    const fifo = join(dir, 'cgroup.procs');
    execFileSync('mkfifo', [fifo]);
    const marker = join(dir, 'ran');
    const spawner = new Spawner({ program, dir: join(dir, 'bin') });
    let pid: number | undefined;
    spawner.start(
      {
        file: 'bwrap',
        args: ['--args', '6', '--', 'sh', '-c', `echo ran > ${marker}`],
        env: { PATH: '/usr/bin:/bin' },
        user: null,
        join: [fifo],
        leave: [],
        status: true,
        control: false,
        stdin: false,
        warm: null,
        // With these the command would run and write the marker (the host's root, this test's directory).
        // No --json-status-fd: bubblewrap's write of its init's pid to a status pipe whose reader died would
        // kill it with SIGPIPE, and its init would then run the command only when it set its own parent-death
        // signal too late — the race behind the orphans; without that write the unfixed order runs it always.
        fdArgs: ['--bind', '/', '/', '--block-fd', '4'],
      },
      {
        pid: (p) => {
          pid = p;
        },
        pipe: (_fd, socket) => socket.resume(),
        init: () => undefined,
        warning: () => undefined,
        failed: () => undefined,
        exit: () => undefined,
        lost: () => undefined,
      },
    );
    // The pid is sent once bubblewrap started; the join waits on the FIFO (no reader) from then on.
    await vi.waitFor(() => expect(pid).toBeDefined(), { timeout: 10_000 });
    expect(hostArgvWith(marker)).toHaveLength(1); // bubblewrap, waiting in the join
    spawner.stop(); // SIGKILL: no hook of the spawner runs
    // Bubblewrap ends: failing on an empty fd 6, or killed by the parent-death signal the native spawner set.
    // With its options it would first have run the command (it waits for its child).
    await vi.waitFor(() => expect(gone(pid!)).toBe(true), { timeout: 10_000 });
    // Then what the driver does for a lost spawner (launch.ts, `lost`): SIGKILL bubblewrap's process group.
    // A clone it made just before its parent-death signal still waits there on its start-up eventfd.
    try {
      process.kill(-pid!, 'SIGKILL');
    } catch {
      // no member left
    }
    await vi.waitFor(() => expect(hostArgvWith(marker)).toEqual([]), { timeout: 10_000 });
    expect(existsSync(marker)).toBe(false);
  });
});
