// The process driver's sandboxes run as an unprivileged uid (65534) that must reach their workspaces
// under the placement directory. A data directory made with mode 0700 (mkdtemp, a cautious umask)
// would stop them at its door, and every exec would fail. Directories this process owns on the way
// get the others' search bit (traverse only: nothing becomes listable or readable).
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';

export function makeTraversable(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const uid = process.getuid?.();
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const st = statSync(d);
    if (st.uid === uid && (st.mode & 0o001) === 0) chmodSync(d, (st.mode & 0o7777) | 0o001);
    if (path.dirname(d) === d) break;
  }
}
