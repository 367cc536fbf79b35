// Processes seen through Linux /proc, for the tests that prove the main job leaves none behind.
import { readdirSync, readFileSync } from 'node:fs';

/** Live (not zombie) processes whose command line names `file`; with `parent`, only its children. */
export function processesRunning(file: string, parent?: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc').filter((d) => /^\d+$/.test(d)))
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z' || (parent !== undefined && Number(ppid) !== parent)) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(file)) out.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  return out;
}
