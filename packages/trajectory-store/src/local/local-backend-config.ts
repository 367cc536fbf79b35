// Options of the local-directory backend (the embedded default), parsed at the boundary.
import { z } from 'zod';

export const LocalBackendConfig = z.strictObject({
  /** The directory the store owns; the app passes `EVERDICT_DATA_DIR/trajectories`. Created if absent. */
  root: z.string().min(1),
  /**
   * `true`: every write is fsync'ed before it is acknowledged (survives power loss). `false` (default): an
   * acknowledged write is in the OS page cache — it survives a crash or restart of the process.
   */
  fsync: z.boolean().default(false),
});
export type LocalBackendConfig = z.input<typeof LocalBackendConfig>;
