// Running the machine's kubectl against a test API server: a temp kubeconfig and discovery cache, and a
// version check that fails (never skips) when kubectl is missing or older than 1.30.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestApiServer } from '../src/testing/index.js';

export const KUBECTL = process.env.EVERDICT_KUBECTL ?? '/usr/bin/kubectl';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** kubectl's client version; throws when it cannot be run or is older than 1.30. */
export async function requireKubectl(): Promise<string> {
  const result = await new Promise<KubectlResult>((resolve) => {
    execFile(KUBECTL, ['version', '--client', '-o', 'json'], (error, stdout, stderr) => {
      resolve({ code: error ? 1 : 0, stdout, stderr: stderr || String(error ?? '') });
    });
  });
  if (result.code !== 0) throw new Error(`kubectl (${KUBECTL}) cannot run: ${result.stderr}`);
  const info = JSON.parse(result.stdout) as {
    clientVersion: { major: string; minor: string; gitVersion: string };
  };
  const minor = Number.parseInt(info.clientVersion.minor, 10);
  if (info.clientVersion.major !== '1' || !(minor >= 30)) {
    throw new Error(`kubectl ${info.clientVersion.gitVersion} is older than 1.30`);
  }
  return info.clientVersion.gitVersion;
}

export class Kubectl {
  private constructor(
    readonly dir: string,
    readonly kubeconfig: string,
  ) {}

  static async for(server: TestApiServer, namespace = 'default'): Promise<Kubectl> {
    const dir = await mkdtemp(join(tmpdir(), 'everdict-kubectl-'));
    return new Kubectl(dir, await server.writeKubeconfig(dir, namespace));
  }

  private args(args: string[]): string[] {
    return ['--kubeconfig', this.kubeconfig, '--cache-dir', join(this.dir, 'cache'), ...args];
  }

  run(args: string[], input?: string): Promise<KubectlResult> {
    return new Promise((resolve) => {
      const child = spawn(KUBECTL, this.args(args), { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      child.stdin.end(input ?? '');
    });
  }

  /** A long-running kubectl (get --watch, logs -f): its output so far, a wait for a pattern, and stop. */
  start(args: string[]) {
    const child = spawn(KUBECTL, this.args(args), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const waiters: { pattern: RegExp; resolve: () => void }[] = [];
    const check = () => {
      for (const w of [...waiters]) {
        if (w.pattern.test(stdout)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    };
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      check();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const closed = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
    return {
      get stdout() {
        return stdout;
      },
      get stderr() {
        return stderr;
      },
      closed,
      waitFor: (pattern: RegExp) =>
        new Promise<void>((resolve) => {
          waiters.push({ pattern, resolve });
          check();
        }),
      stop: async () => {
        child.kill('SIGTERM');
        await closed;
      },
    };
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}
