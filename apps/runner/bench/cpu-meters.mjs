// CPU meters of the runner bench (dispatch-runner.mjs), read from /proc: a process's own and reaped children's
// CPU, the runner's spawner, the PostgreSQL backends of one database, the whole machine's busy CPU.
import { readFileSync } from 'node:fs';

/** CPU time of a process (ms): its own and its reaped children's (/proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (i) => Number(f[i]) * 10;
    return { self: ms(11) + ms(12), kernel: ms(12), children: ms(13) + ms(14) };
  } catch {
    return { self: 0, kernel: 0, children: 0 };
  }
}

/**
 * The runner's spawner (@everdict/placement-process starts bubblewrap from a small process, its child: the
 * native spawner, or a Node one):
 * its pid, or null (a build that forks bubblewrap from the runner itself).
 */
export function spawnerOf(pid) {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean);
    for (const kid of kids) {
      const argv = readFileSync(`/proc/${kid}/cmdline`, 'utf8').split('\0');
      if (argv[0] === process.execPath && argv.includes('-e')) return Number(kid);
      // the native spawner: <stateDir>/bin/spawner-<hash> (placement-process README, Spawner)
      if (/\/bin\/spawner-[0-9a-f]+$/.test(argv[0])) return Number(kid);
    }
  } catch {
    // gone
  }
  return null;
}

/** CPU time (ms) of the PostgreSQL backends serving `database` now (their pids from pg_stat_activity). */
export async function pgCpuMs(client, database) {
  // Not this script's own backend: its settled-count polls (a scan of runs, every 250 ms, every 20 ms near the
  // end) are the bench's cost, not the control plane's (polled every 20 ms throughout, they were ≈ 1.5 ms of
  // PostgreSQL time per run at 1,000 runs, growing with the table).
  const { rows } = await client.query(
    'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [database],
  );
  return new Map(rows.map((r) => [r.pid, cpuMs(r.pid).self]));
}

/** The whole machine's busy CPU so far (ms): /proc/stat's first line, all but idle and iowait (USER_HZ 100). */
export function machineBusyMs() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return (user + nice + system + irq + softirq + steal) * 10;
}

/** `fn`'s result and the machine's busy CPU per unit over it (ms, one decimal). */
export async function machinePer(units, fn) {
  const m0 = machineBusyMs();
  const result = await fn();
  return { result, msPerUnit: Math.round(((machineBusyMs() - m0) / units) * 10) / 10 };
}
