#!/usr/bin/env node
// everdict-placement-process: add an image from a tarball, list images, reap a crash's leftovers.
//   everdict-placement-process import-image <name> <tarball> [--images-dir DIR]
//   everdict-placement-process reap [--state-dir DIR] [--tenant T] [--run R] [--kind K]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { isPlacementError } from '@everdict/placement';
import { importImage } from './images.js';
import { ProcessDriver } from './process-driver.js';

const USAGE = `usage:
  everdict-placement-process import-image <name> <tarball> [--images-dir DIR]   (default $EVERDICT_IMAGES_DIR)
  everdict-placement-process reap [--state-dir DIR] [--tenant T] [--run R] [--kind K]`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'images-dir': { type: 'string' },
      'state-dir': { type: 'string' },
      tenant: { type: 'string' },
      run: { type: 'string' },
      kind: { type: 'string' },
    },
  });
  const [command, ...rest] = positionals;
  if (command === 'import-image' && rest.length === 2) {
    const driver = new ProcessDriver(values['images-dir'] ? { imagesDir: values['images-dir'] } : {});
    const image = await importImage(driver.config.imagesDir, rest[0]!, await readFile(rest[1]!));
    process.stdout.write(`${JSON.stringify(image)}\n`);
    return 0;
  }
  if (command === 'reap' && rest.length === 0) {
    const driver = new ProcessDriver(values['state-dir'] ? { stateDir: values['state-dir'] } : {});
    const labels = {
      ...(values.tenant ? { tenant: values.tenant } : {}),
      ...(values.run ? { runId: values.run } : {}),
      ...(values.kind ? { kind: values.kind } : {}),
    };
    for (const r of await driver.reap({ labels })) process.stdout.write(`${JSON.stringify(r)}\n`);
    return 0;
  }
  process.stderr.write(`${USAGE}\n`);
  return 2;
}

// On a pipe stdout is asynchronous: exiting at once drops what the reader has not taken yet (a long `reap`
// listing). An empty write's callback runs once every write before it has been handed to the OS.
async function exitFlushed(code: number): Promise<never> {
  await Promise.all([process.stdout, process.stderr].map((s) => new Promise((done) => s.write('', done))));
  process.exit(code);
}

main(process.argv.slice(2)).then(exitFlushed, (e: unknown) => {
  process.stderr.write(`${isPlacementError(e) ? `${e.code}: ${e.message}` : String(e)}\n`);
  return exitFlushed(1);
});
