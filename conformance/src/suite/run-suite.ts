// Runs vectors against an implementation with bounded parallelism, results in vector order.
import type { Implementation, Invocation } from '../contract/implementation.js';
import type { VectorT } from '../vectors/schema.js';
import { type CaseResult, runCase } from './run-vector.js';

/**
 * `build` is a function of its input, so one record built for several cases (every tamper case starts
 * from the same one) is built once per run.
 */
export function memoizingBuild(impl: Implementation): Implementation {
  const built = new Map<string, Promise<Invocation>>();
  return {
    label: impl.label,
    invoke(subcommand, stdin, args) {
      if (subcommand !== 'build' || args.length > 0) return impl.invoke(subcommand, stdin, args);
      const known = built.get(stdin);
      if (known !== undefined) return known;
      const run = impl.invoke(subcommand, stdin, args);
      built.set(stdin, run);
      return run;
    },
  };
}

export async function runSuite(
  impl: Implementation,
  vectors: readonly VectorT[],
  options: { concurrency?: number; onResult?: (r: CaseResult) => void } = {},
): Promise<CaseResult[]> {
  const memo = memoizingBuild(impl);
  const results: CaseResult[] = new Array(vectors.length);
  let next = 0;
  let printed = 0;
  const done = new Array<boolean>(vectors.length).fill(false);
  const worker = async (): Promise<void> => {
    while (next < vectors.length) {
      const at = next++;
      const vector = vectors[at];
      if (vector === undefined) return;
      results[at] = await runCase(memo, vector);
      done[at] = true;
      // Report in vector order as soon as every earlier case has finished.
      while (printed < vectors.length && done[printed]) {
        const r = results[printed];
        if (r !== undefined) options.onResult?.(r);
        printed++;
      }
    }
  };
  const width = Math.max(1, Math.min(options.concurrency ?? 4, 4, vectors.length));
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}
