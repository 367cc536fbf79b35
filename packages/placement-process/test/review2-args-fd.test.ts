// Bubblewrap's namespace init is pid 1 in the sandbox and a copy of bubblewrap: its command line
// (/proc/1/cmdline, readable by the command) was bubblewrap's whole argv — the host path of the workspace
// (`--bind <host path> /workspace`), the host's system directories, and the loader variables (LD_*, …) with
// their values as `--setenv` arguments. Those arguments now reach bubblewrap through a descriptor (`--args
// 6`, NUL-separated), so no process's command line in the sandbox, nor on the host, holds them. Run on every
// way bubblewrap is started: the spawner (native, or the Node one with EVERDICT_PLACEMENT_SPAWNER_PROGRAM=node)
// and inline, each with and without the cgroup hold.
import { utf8 } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { layout, readRecord } from '../src/sandbox-state.js';
import { hostArgvWith, makeDriver, requireBwrap } from './helpers.js';

const SECRET = 'ld-review2-value-5c1e';

// every process's command line in the sandbox (the init, the shell), then the shell's own environment
const READ =
  'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; done; echo ---; tr "\\0" "\\n" < /proc/self/environ';

describe.each(['process', 'inline'] as const)(
  'bubblewrap arguments through a descriptor (spawner %s)',
  (spawner) => {
    for (const limits of ['auto', 'rlimit'] as const) {
      it(`shows no host path and no loader variable in any command line (limits ${limits})`, async () => {
        requireBwrap();
        const driver = makeDriver({ spawner, limits, readyPool: 0 });
        const box = await driver.provision({
          labels: { tenant: 'review2', runId: `args-${spawner}-${limits}`, kind: 'command' },
          directories: ['sub'],
        });
        const workspace = (await readRecord(layout(driver.config.stateDir), box.id))!.workspace;
        const stream = await driver.stream(box, ['sh', '-c', `${READ}; read line`], {
          env: { LD_LIBRARY_PATH: `/opt/${SECRET}`, MALLOC_ARENA_MAX: '2' },
          cwd: 'sub',
        });
        let out = '';
        await new Promise<void>((resolve) => {
          stream.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            if (out.includes('LD_LIBRARY_PATH=')) resolve();
          });
          stream.stdout.once('end', resolve); // it failed: the assertions below tell
        });
        // bubblewrap and its init are alive: the command waits on its stdin
        const onHost = hostArgvWith(SECRET);
        stream.stdin.end('done\n');
        await stream.exit;
        const [lines, environ] = out.split('---\n') as [string, string];
        expect(lines).toMatch(/\S/); // the init's and the shell's command lines were read
        expect(lines).not.toContain(workspace);
        expect(lines).not.toContain(driver.config.stateDir);
        expect(lines).not.toContain(SECRET);
        expect(lines).not.toMatch(/--bind|--setenv|--ro-bind|--chdir/);
        expect(environ).not.toContain(workspace);
        // the loader variables still reach the command, and the working directory is still the one asked for
        expect(environ).toContain(`LD_LIBRARY_PATH=/opt/${SECRET}`);
        expect(environ).toContain('MALLOC_ARENA_MAX=2');
        expect(environ).toContain('PWD=/workspace/sub');
        expect(onHost).toEqual([]);
        const pwd = await driver.exec(box, ['pwd'], { cwd: 'sub' });
        expect(utf8(pwd.stdout)).toBe('/workspace/sub\n');
        await driver.dispose(box);
      }, 60_000);
    }
  },
);
