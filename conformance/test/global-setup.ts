// The command-line tests run the built CLIs (dist/cli.js, dist/reference-cli.js): build them once first.
import { build } from 'tsup';
import { tsupOptions } from '../tsup.config.js';

export default async function setup(): Promise<void> {
  await build({ ...tsupOptions, config: false, silent: true });
}
