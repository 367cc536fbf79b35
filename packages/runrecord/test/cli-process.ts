// The built CLI (dist/cli.js) as a child process, as the conformance suite drives it: arguments, standard
// input, stdout/stderr, exit code. Shared by the test/cli*.test.ts files.
//
// Test time (README "Tests"): a CLI start is ≈ 0.2 s of CPU, most of it Node's own start, and a test file
// makes dozens. So the calls are asynchronous — a test starts the calls that do not depend on each other
// together (`Promise.all`), a few processes at a time (MAX_AT_ONCE) — and the child's environment leaves out
// NODE_EXTRA_CA_CERTS: with it set, Node parses that bundle at every start (≈ 0.05–0.1 s of CPU per start
// here, measured with `/usr/bin/time` over 20 starts each way), and no command of these tests speaks TLS
// (the logs they query are plain HTTP on 127.0.0.1).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const pkg = fileURLToPath(new URL('..', import.meta.url));
export const cli = `${pkg}dist/cli.js`;

/** Fails the calling file at once when the CLI has not been built (`beforeAll(requireBuiltCli)`). */
export function requireBuiltCli(): void {
  if (!existsSync(cli))
    throw new Error(`${cli} is missing: run \`pnpm --filter @everdict/runrecord build\` first`);
}

const { NODE_EXTRA_CA_CERTS: _unused, ...childEnv } = process.env;

/** CLI processes alive at once, over every file of the worker (this package's files share one). */
const MAX_AT_ONCE = 4;
let alive = 0;
const waiting: (() => void)[] = [];
async function slot(): Promise<() => void> {
  while (alive >= MAX_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
  alive += 1;
  return () => {
    alive -= 1;
    waiting.shift()?.();
  };
}

export interface CliResult {
  /** Exit status (null: killed by a signal). */
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
  /** stdout parsed as JSON (throws where it is not). */
  // biome-ignore lint/suspicious/noExplicitAny: the CLI's JSON answers, read field by field in the tests
  json(): any;
}

/**
 * Runs `everdict-runrecord ...args` with `input` on standard input (or `stdin`: a file descriptor handed to
 * the child as its fd 0) and resolves once it has exited and its output is read.
 */
export async function runCli(
  args: readonly string[],
  input: string | Buffer,
  stdin?: number,
): Promise<CliResult> {
  const release = await slot();
  try {
    return await new Promise<CliResult>((resolve, reject) => {
      const p = spawn(process.execPath, [cli, ...args], {
        env: childEnv,
        stdio: [stdin ?? 'pipe', 'pipe', 'pipe'],
      });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      p.stdout?.on('data', (d: Buffer) => out.push(d));
      p.stderr?.on('data', (d: Buffer) => err.push(d));
      p.on('error', reject);
      p.on('close', (code) => {
        const text = Buffer.concat(out).toString('utf8');
        resolve({
          code,
          out: text,
          err: Buffer.concat(err).toString('utf8'),
          json: () => JSON.parse(text),
        });
      });
      // The child may exit before reading all of it (a usage error): a broken pipe is not the test's failure.
      p.stdin?.on('error', () => undefined);
      p.stdin?.end(input);
    });
  } finally {
    release();
  }
}
