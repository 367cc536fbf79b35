// Escape attempts, each a real one on real bubblewrap, each of which must fail: the network, the host's
// filesystem (writes outside the workspace; reading the home directory or this checkout), the host's
// processes, a fork bomb past the pid limit, memory past the limit, CPU past its limit, and outliving
// dispose. The control cases (a network grant connects; the workspace is writable) show each probe works.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { type SandboxHandle, utf8 } from '@everdict/placement';
import { collect, refusal } from '@everdict/placement/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layout, listRecords } from '../src/sandbox-state.js';
import { makeDriver, requireBwrap } from './helpers.js';

const driver = makeDriver();
const labels = (runId: string) => ({ tenant: 'isolation', runId, kind: 'sandbox' });
const sh = (script: string) => ['sh', '-c', script];
let seq = 0;
const provision = (extra = {}) => driver.provision({ labels: labels(`iso-${++seq}`), ...extra });
const text = (r: { stdout: Uint8Array; stderr: Uint8Array }) => `${utf8(r.stdout)}${utf8(r.stderr)}`;

beforeAll(() => {
  requireBwrap();
});

describe('network', () => {
  let server: Server;
  let port = 0;
  const seen: string[] = [];
  beforeAll(async () => {
    server = createServer((sock) => sock.on('data', (d) => seen.push(d.toString())));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const probe = () =>
    `if exec 3<>/dev/tcp/127.0.0.1/${port}; then printf probe-$$ >&3; echo CONNECTED; else echo REFUSED; fi`;

  it('has only a loopback interface and cannot reach a listener on the host’s 127.0.0.1', async () => {
    const h = await provision();
    const dev = await driver.exec(h, ['cat', '/proc/net/dev']);
    const ifaces = utf8(dev.stdout)
      .split('\n')
      .slice(2)
      .map((l) => l.split(':')[0]!.trim())
      .filter(Boolean);
    expect(ifaces).toEqual(['lo']);
    const r = await driver.exec(h, ['bash', '-c', probe()], { timeoutMs: 20_000 });
    expect(utf8(r.stdout)).toContain('REFUSED');
    expect(seen).toEqual([]);
  });

  it('control: with a network grant the same probe connects', async () => {
    const h = await provision({ network: 'granted' });
    const r = await driver.exec(h, ['bash', '-c', probe()], { timeoutMs: 20_000 });
    expect(utf8(r.stdout)).toContain('CONNECTED');
    await expect.poll(() => seen.join('')).toMatch(/probe-\d+/);
  });
});

describe('filesystem', () => {
  it('cannot write outside the workspace; the workspace and a private /tmp are writable', async () => {
    const h = await provision();
    const marker = `everdict-escape-${process.pid}-${Date.now()}`;
    for (const target of [
      `/usr/${marker}`,
      `/${marker}`,
      `/workspace/../${marker}`,
      `/bin/${marker}`,
      `/etc/ssl/${marker}`,
    ]) {
      const r = await driver.exec(h, sh(`echo x > '${target}'`));
      expect(r.exitCode, target).not.toBe(0);
    }
    const tmp = await driver.exec(h, sh(`echo x > /tmp/${marker} && cat /tmp/${marker}`));
    expect(utf8(tmp.stdout)).toBe('x\n');
    expect(existsSync(`/tmp/${marker}`)).toBe(false);
    expect((await driver.exec(h, sh('echo ok > /workspace/inside && cat inside'))).exitCode).toBe(0);
    for (const dir of ['/usr', '/', '/bin']) expect(existsSync(`${dir}/${marker}`)).toBe(false);
  });

  it("cannot read the host's home directory or this repository checkout", async () => {
    const h = await provision();
    const repoFile = fileURLToPath(new URL('../package.json', import.meta.url));
    expect(readFileSync(repoFile, 'utf8')).toContain('@everdict/placement-process');
    const home = homedir();
    for (const probe of [
      `cat '${repoFile}'`,
      `ls '${home}'`,
      `cat /proc/1/root${repoFile}`,
      'ls /work',
      'cat /etc/passwd',
      'ls /root',
    ]) {
      const r = await driver.exec(h, sh(probe));
      expect(r.exitCode, probe).not.toBe(0);
      expect(text(r)).not.toContain('@everdict/placement-process');
    }
    const top = await driver.exec(h, ['ls', '/']);
    expect(utf8(top.stdout).trim().split('\n').sort()).toEqual(
      ['bin', 'dev', 'etc', 'lib', 'lib64', 'proc', 'sbin', 'tmp', 'usr', 'workspace'].filter(
        (d) => existsSync(`/${d}`) || d === 'workspace',
      ),
    );
  });

  it('runs as an unprivileged host user: the sandbox cannot change what it may not', async () => {
    const h = await provision();
    const r = await driver.exec(h, sh('id -u; touch /workspace/f && stat -c %u /workspace/f'));
    const [, fileOwner] = utf8(r.stdout).trim().split('\n');
    expect(fileOwner).toBe('65534');
  });
});

describe('processes', () => {
  it('sees none of the host’s processes', async () => {
    const h = await provision();
    const r = await driver.exec(
      h,
      sh('for p in /proc/[0-9]*; do echo "$(basename $p) $(tr "\\0" " " < $p/cmdline)"; done'),
    );
    const lines = utf8(r.stdout).trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(4);
    expect(utf8(r.stdout)).not.toMatch(/node|vitest/);
    expect(lines.map((l) => Number(l.split(' ')[0])).every((pid) => pid < 10)).toBe(true);
  });

  it('stops a fork bomb at the pid limit with pids_exhausted; the sandbox survives', async () => {
    const h = await provision({ limits: { pids: 32 } });
    const err = await refusal(
      driver.exec(h, sh('bomb() { bomb & bomb; }; bomb'), { timeoutMs: 60_000 }),
      'pids_exhausted',
    );
    expect(err.detail).toHaveProperty('result');
    const record = (await listRecords(layout(driver.config.stateDir))).find((x) => x.handle.id === h.id)!;
    const pidsDir = record.limits.paths.find((p) => p.includes('/pids/'))!;
    expect(readFileSync(`${pidsDir}/cgroup.procs`, 'utf8').trim()).toBe('');
    const r = await driver.exec(h, sh('echo still-here'));
    expect(utf8(r.stdout)).toBe('still-here\n');
  }, 120_000);

  it('stops a command that allocates past the memory limit with oom', async () => {
    const h = await provision({ limits: { memoryBytes: 64 * 1024 * 1024 } });
    await refusal(
      driver.exec(h, ['perl', '-e', '$x = "a" x (400 * 1024 * 1024); print length $x'], {
        timeoutMs: 60_000,
      }),
      'oom',
    );
    const u = await driver.usage(h);
    expect(u.peakMemoryBytes).toBeGreaterThan(32 * 1024 * 1024);
    expect(u.peakMemoryBytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect((await driver.exec(h, sh('echo fine'))).exitCode).toBe(0);
  }, 120_000);

  it('stops a command past the CPU-time limit with timeout (bound cpu) and accounts the CPU it used', async () => {
    const h = await provision({ limits: { cpuTimeMs: 400 } });
    const err = await refusal(driver.exec(h, sh('while :; do :; done'), { timeoutMs: 120_000 }), 'timeout');
    expect(err.detail).toMatchObject({ bound: 'cpu' });
    expect((await driver.usage(h)).cpuTimeMs).toBeGreaterThanOrEqual(400);
  }, 120_000);

  it('leaves nothing running after dispose: background, setsid and nohup children all die', async () => {
    const h: SandboxHandle = await provision();
    const marker = `${4000 + (process.pid % 1000)}.${Date.now() % 100000}`;
    const s = await driver.stream(
      h,
      sh(
        `sleep ${marker} & setsid sleep ${marker} & nohup sleep ${marker} >/dev/null 2>&1 & echo started; wait`,
      ),
    );
    const out = collect(s.stdout);
    const exit = s.exit.catch((e: unknown) => e);
    await expect.poll(() => hostProcesses(marker).length, { timeout: 20_000 }).toBe(3);
    const record = (await listRecords(layout(driver.config.stateDir))).find((r) => r.handle.id === h.id)!;
    await driver.dispose(h);
    expect(hostProcesses(marker)).toEqual([]);
    for (const cg of record.limits.paths) expect(existsSync(cg)).toBe(false);
    expect(existsSync(record.workspace)).toBe(false);
    expect(await exit).toMatchObject({ code: 'gone' });
    expect(await out).toContain('started');
  }, 120_000);
});

/** Host pids whose command line is `sleep <marker>`. */
function hostProcesses(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (cmd[0]?.endsWith('sleep') && cmd[1] === marker) out.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

describe('environment', () => {
  it("keeps the caller's variables away from bubblewrap itself: they reach only the sandbox", async () => {
    const h = await provision();
    // LD_DEBUG makes the dynamic loader of every program that gets it report what it loads: if bubblewrap
    // (which runs on the host, outside the namespaces) got the caller's environment, LD_PRELOAD would too.
    const r = await driver.exec(h, ['true'], { env: { LD_DEBUG: 'files' } });
    const debug = utf8(r.stderr);
    expect(debug).toMatch(/needed by .*true|initialize program: .*true/);
    expect(debug).not.toMatch(/bwrap/);
    const names = await driver.exec(h, sh('printenv | cut -d= -f1 | sort | tr "\\n" " "'));
    expect(utf8(names.stdout).trim().split(' ')).toEqual(['HOME', 'PATH', 'PWD']);
  });
});
