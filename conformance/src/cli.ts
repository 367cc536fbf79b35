// everdict-conformance [--impl "<command>"] [--vectors DIR] [--class C6,C14,…] [--only NAME,…] [--timeout MS]
// Drives an implementation through the run-record command-line contract and reports per case.
import { existsSync } from 'node:fs';
import { commandImplementation } from './contract/implementation.js';
import { defaultImplCli, defaultVectorsDir } from './package-root.js';
import { caseLine, summaryLines } from './suite/report.js';
import { runSuite } from './suite/run-suite.js';
import { loadVectors } from './vectors/files.js';

interface Options {
  impl?: string;
  vectors: string;
  classes?: string[];
  only?: string[];
  timeoutMs: number;
}

const USAGE =
  'usage: everdict-conformance [--impl "<command>"] [--vectors DIR] [--class C6,C14] [--only NAME,…] [--timeout MS]';

function parseArgs(argv: readonly string[]): Options {
  const o: Options = { vectors: defaultVectorsDir(), timeoutMs: 10_000 };
  const args = argv.filter((a) => a !== '--');
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    const value = args[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
    if (flag === '--impl') o.impl = value;
    else if (flag === '--vectors') o.vectors = value;
    else if (flag === '--class') o.classes = value.split(',').map((c) => c.trim().toUpperCase());
    else if (flag === '--only') o.only = value.split(',').map((n) => n.trim());
    else if (flag === '--timeout') o.timeoutMs = Number(value);
    else throw new Error(`unknown argument ${flag}\n${USAGE}`);
    i++;
  }
  return o;
}

async function main(): Promise<number> {
  const o = parseArgs(process.argv.slice(2));
  let command = o.impl;
  if (command === undefined) {
    const cli = defaultImplCli();
    if (!existsSync(cli)) {
      console.error(
        `our implementation is not built (${cli}); run \`pnpm --filter @everdict/runrecord build\``,
      );
      return 2;
    }
    command = `"${process.execPath}" "${cli}"`;
  }
  const vectors = loadVectors(o.vectors).filter(
    (v) =>
      (o.classes === undefined || o.classes.includes(v.class)) &&
      (o.only === undefined || o.only.includes(v.name)),
  );
  console.log(`conformance: ${vectors.length} cases against ${command}`);
  // Under `pnpm conformance`, a relative --impl path means one relative to where pnpm was started.
  const cwd = process.env.INIT_CWD ?? process.cwd();
  const results = await runSuite(commandImplementation(command, o.timeoutMs, cwd), vectors, {
    concurrency: 4,
    onResult: (r) => console.log(caseLine(r)),
  });
  for (const line of summaryLines(results)) console.log(line);
  return results.every((r) => r.passed) && results.length > 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(e instanceof Error ? e.message : String(e));
    process.exitCode = 2;
  },
);
