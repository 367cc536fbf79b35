// The main job failing to start (the control plane not listening or not healthy in time — an unreachable
// DATABASE_URL, a slow first start): startStack rejects AND the control plane it spawned is gone. Before, the
// rejection left that process running with no main job to stop it (holding the port and the data dir).
// Runs the real built control plane (apps/control-plane/dist/main.js).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processesRunning } from '../../test/procs.js';
import { defaultPaths } from './parts.js';
import { startStack } from './stack.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'everdict-stack-'));
const leaked: number[] = [];
afterAll(() => {
  // Only if the test failed: stop what it left running, by pid.
  for (const pid of leaked)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * This worker's children naming `file` that `fn` left running: children from before it are not its. Test
 * files share one worker (isolate: false), and a file whose hook timed out can leave its own control plane
 * running as a child of that worker — the CI failure `expected [ 21543 ] to deeply equal []` was that one.
 */
async function leftRunning(
  file: string,
  fn: () => Promise<unknown>,
): Promise<{ out: unknown; pids: number[] }> {
  const before = new Set(processesRunning(file, process.pid));
  const out = await fn().then(
    () => undefined,
    (e: unknown) => e,
  );
  return { out, pids: processesRunning(file, process.pid).filter((pid) => !before.has(pid)) };
}

describe('startStack', () => {
  it('a control plane not healthy in time is stopped before startStack rejects', async () => {
    const paths = defaultPaths({});
    expect(existsSync(paths.controlPlane)).toBe(true);
    // Another child of this worker that names the control plane, running all along (as one another file left).
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60_000)', paths.controlPlane], {
      stdio: 'ignore',
    });
    const otherGone = new Promise((r) => other.once('exit', r));
    await new Promise((r) => other.once('spawn', r)); // exec'd: its command line names the control plane
    try {
      const { out: err, pids } = await leftRunning(paths.controlPlane, () =>
        startStack({
          dataDir,
          port: 0,
          env: { PATH: process.env.PATH ?? '' },
          paths,
          healthTimeoutMs: 1,
        }),
      );
      expect(String(err)).toMatch(/did not listen in time|not healthy in time/);
      leaked.push(...pids);
      expect(pids).toEqual([]);
    } finally {
      other.kill('SIGKILL');
      await otherGone;
    }
  }, 120_000);

  it('a control plane that accepts but never answers /healthz: rejects at the deadline, not never', async () => {
    // A stand-in control plane: listens on PORT, answers nothing (a real child process, a real socket).
    const fake = path.join(dataDir, 'hung-control-plane.mjs');
    writeFileSync(
      fake,
      "import http from 'node:http'; http.createServer(() => {}).listen(Number(process.env.PORT), '127.0.0.1');\n",
    );
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const { out: err, pids } = await leftRunning(fake, () =>
      startStack({
        dataDir: path.join(dataDir, 'hung'),
        port,
        env: { PATH: process.env.PATH ?? '' },
        paths: { controlPlane: fake, agent: fake },
        healthTimeoutMs: 1_000,
      }),
    );
    expect(String(err)).toMatch(/not healthy in time/);
    leaked.push(...pids);
    expect(pids).toEqual([]);
  }, 30_000);
  it('a port another server listens on is refused before anything starts (not "healthy" through it)', async () => {
    // Another server on the port that answers /healthz 200, as a second main job would.
    const other = http.createServer((_req, res) => res.end('{"status":"ok"}'));
    const port = await new Promise<number>((resolve) =>
      other.listen(0, '127.0.0.1', () => resolve((other.address() as net.AddressInfo).port)),
    );
    const paths = defaultPaths({});
    const dir = path.join(dataDir, 'port-taken');
    try {
      const outcome = await startStack({
        dataDir: dir,
        port,
        env: { PATH: process.env.PATH ?? '' },
        paths,
        healthTimeoutMs: 120_000,
      }).then(
        async (stack) => {
          await stack.stop();
          return 'started';
        },
        (e: unknown) => e,
      );
      expect(String(outcome)).toMatch(
        new RegExp(`port ${port} on 127\\.0\\.0\\.1 is not free \\(EADDRINUSE\\)`),
      );
      expect(existsSync(path.join(dir, 'main-job.json'))).toBe(false); // no keys minted for it
    } finally {
      await new Promise((r) => other.close(r));
    }
  }, 180_000);
});
