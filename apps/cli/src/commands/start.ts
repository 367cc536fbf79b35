// everdict start — the main job (`pnpm start`): every part of the platform on this machine, until Ctrl-C.
import path from 'node:path';
import type { Command } from 'commander';
import type { Context, Done } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { type Io, line } from '../io.js';
import { startStack } from '../stack/stack.js';

export function dataDirOf(env: NodeJS.ProcessEnv, flag?: string): string {
  return path.resolve(flag ?? env.EVERDICT_DATA_DIR ?? '.everdict');
}

export async function startCommand(
  io: Io,
  o: { port: string; host?: string; dataDir?: string },
): Promise<number> {
  if (!/^\d+$/.test(o.port)) throw new CliError('usage', '--port is a number');
  const dataDir = dataDirOf(io.env, o.dataDir);
  const stack = await startStack({
    dataDir,
    port: Number(o.port),
    ...(o.host ? { host: o.host } : {}),
    env: io.env,
    onStatus: (s) => line(io.stderr, s),
    ...(io.signal ? { signal: io.signal } : {}),
  });
  const shownUrl = stack.url.replace('127.0.0.1', 'localhost');
  line(io.stdout, '');
  line(io.stdout, 'Everdict is running.');
  line(io.stdout, `  console  ${shownUrl}/console   (paste the API key when it asks)`);
  line(io.stdout, `  API key  ${stack.apiKey}   (tenant default, admin)`);
  for (const [k, v] of Object.entries(stack.backing)) line(io.stdout, `  ${k.padEnd(13)}${v}`);
  line(io.stdout, '');
  line(io.stdout, `  export EVERDICT_URL=${stack.url} EVERDICT_API_KEY=${stack.apiKey}`);
  line(io.stdout, '  then: pnpm demo · node apps/cli/dist/main.js --help');
  line(io.stdout, 'Ctrl-C stops everything.');
  line(io.stdout, `READY ${stack.url}`);

  const stopped = new Promise<'signal'>((resolve) => {
    if (io.signal?.aborted) resolve('signal');
    io.signal?.addEventListener('abort', () => resolve('signal'), { once: true });
  });
  const outcome = await Promise.race([stopped, stack.failed]);
  if (outcome === 'signal') {
    line(io.stderr, 'stopping…');
    await stack.stop();
    line(io.stderr, 'stopped');
    return EXIT.ok;
  }
  line(
    io.stderr,
    `${outcome.part} exited (${outcome.code}); stopping the rest\n${outcome.tail.slice(-2000)}`,
  );
  await stack.stop();
  return EXIT.unavailable;
}

export function registerStart(program: Command, io: Io, done: Done): void {
  program
    .command('start')
    .description(
      'the main job: control plane, embedded runner and agent service on this machine (Ctrl-C stops)',
    )
    .option('--port <port>', 'HTTP port (0: any free port)', '8787')
    .option('--host <host>', 'listen address', '127.0.0.1')
    .option('--data-dir <dir>', 'where PGlite, trajectories, keys and logs live (env EVERDICT_DATA_DIR)')
    .action((o: { port: string; host?: string; dataDir?: string }) => done(startCommand(io, o)));
}

export type { Context };
