// A test file's control plane (the built apps/control-plane through @everdict/client/testing) that its
// afterAll stops however its start went. A beforeAll that times out (CI at load 30–40: "Hook timed out in
// 300000ms") abandons startControlPlane with the child it spawned still running: `cp?.stop()` saw no `cp`,
// and that control plane ran on for the rest of the run — as a child of the one vitest worker all files share
// (isolate: false), where src/stack/stack.test.ts then counted it as its own.

import { fileURLToPath } from 'node:url';
import {
  type ControlPlaneProcess,
  type StartControlPlaneOptions,
  startControlPlane,
} from '@everdict/client/testing';
import { processesRunning } from './procs.js';

/** What startControlPlane runs by default. */
export const CONTROL_PLANE_MAIN = fileURLToPath(new URL('../../control-plane/dist/main.js', import.meta.url));

export interface FileControlPlane {
  /** startControlPlane(options); once stop() has run, a control plane that still comes up is stopped. */
  start(): Promise<ControlPlaneProcess>;
  /** Stops the control plane, and kills what a start still under way spawned (children of this worker). */
  stop(): Promise<void>;
}

export function fileControlPlane(options: StartControlPlaneOptions = {}): FileControlPlane {
  const main = options.mainPath ?? CONTROL_PLANE_MAIN;
  let started: ControlPlaneProcess | undefined;
  let stopped = false;
  let before = new Set<number>();
  return {
    async start() {
      before = new Set(processesRunning(main, process.pid));
      const cp = await startControlPlane(options);
      if (stopped) {
        await cp.stop();
        throw new Error('the control plane came up after its test file had stopped waiting: stopped it');
      }
      started = cp;
      return cp;
    },
    async stop() {
      stopped = true;
      await started?.stop();
      for (const pid of processesRunning(main, process.pid))
        if (!before.has(pid))
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            /* gone meanwhile */
          }
    },
  };
}
