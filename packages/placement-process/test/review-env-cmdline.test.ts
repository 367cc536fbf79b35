// A command's environment (a spec's `env`, an exec's `env`: tokens, API keys) must not be readable by every
// user of the host. A process's argv is (/proc/<pid>/cmdline, `ps`); its environment is readable only by its
// own user and root. Bubblewrap runs on the host: the variables went in as its `--setenv K V` arguments.
// Now they go in as its environment, except those the host's dynamic loader and libc act on (LD_*, …),
// which must never reach bubblewrap itself and stay arguments. And with the caller's PATH in bubblewrap's
// environment, bubblewrap (and prlimit) must still be the host's, not one found on that PATH.
import { utf8 } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { hostArgvWith as argvWith, makeDriver, requireBwrap } from './helpers.js';

const SECRET = 'hunter2-review-secret-7f3a';

describe.each(['process', 'inline'] as const)('environment out of argv (spawner %s)', (spawner) => {
  for (const limits of ['auto', 'rlimit'] as const) {
    it(`keeps env values out of every host argv (limits ${limits})`, async () => {
      requireBwrap();
      const driver = makeDriver({ spawner, limits });
      const box = await driver.provision({
        labels: { tenant: 'review', runId: `env-${spawner}-${limits}`, kind: 'command' },
        env: { API_TOKEN: `spec-${SECRET}` },
      });
      const stream = await driver.stream(box, ['sh', '-c', 'echo "$API_TOKEN $CALL_TOKEN"; read line'], {
        env: { CALL_TOKEN: `call-${SECRET}` },
      });
      const first = new Promise<string>((resolve) =>
        stream.stdout.once('data', (d: Buffer) => resolve(d.toString())),
      );
      // the command runs (it printed), so bubblewrap and the namespace init are alive now
      expect(await first).toBe(`spec-${SECRET} call-${SECRET}\n`);
      const seen = argvWith(SECRET);
      stream.stdin.end('done\n');
      await stream.exit;
      expect(seen).toEqual([]);
      // the command's environment is still exactly what it was
      const names = await driver.exec(box, ['sh', '-c', 'printenv | cut -d= -f1 | sort | tr "\\n" " "']);
      expect(utf8(names.stdout).trim().split(' ')).toEqual(['API_TOKEN', 'HOME', 'PATH', 'PWD']);
      // a caller's PATH is the command's, never where bubblewrap or prlimit are looked up on the host
      const path = await driver.exec(box, ['/bin/sh', '-c', 'echo "$PATH"'], { env: { PATH: '/nowhere' } });
      expect(utf8(path.stdout)).toBe('/nowhere\n');
      // loader variables still reach only the sandbox
      const debug = await driver.exec(box, ['true'], { env: { LD_DEBUG: 'files' } });
      expect(utf8(debug.stderr)).toMatch(/needed by .*true|initialize program: .*true/);
      expect(utf8(debug.stderr)).not.toMatch(/bwrap|prlimit/);
      await driver.dispose(box);
    });
  }
});
