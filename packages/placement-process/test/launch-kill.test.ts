// A kill of a command started through the spawner reaches its process even when the spawner reports the pid
// after the pipes (the launch resolves on the pipes): the kill is remembered and sent as the pid arrives.
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { launchViaSpawner } from '../src/launch.js';
import type { SpawnEvents, Spawner, SpawnRequest } from '../src/spawner/client.js';

const request: SpawnRequest = {
  file: 'sleep',
  args: ['30'],
  env: {},
  user: null,
  join: null,
  warm: null,
  control: false,
  stdin: false,
};

/** A spawner that only hands its events to the test, which plays the messages in the order it chooses. */
function scripted(): { spawner: Spawner; events: () => SpawnEvents } {
  let events: SpawnEvents | undefined;
  const spawner = {
    start: (_request: SpawnRequest, e: SpawnEvents) => {
      events = e;
    },
  } as unknown as Spawner;
  return { spawner, events: () => events! };
}

const pipe = () => new PassThrough() as unknown as Socket;

describe('launchViaSpawner kill', () => {
  it('a kill before the pid arrived is sent to the process group as it arrives', async () => {
    const victim = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const signal = new Promise<NodeJS.Signals | null>((r) => victim.once('exit', (_c, s) => r(s)));
    const { spawner, events } = scripted();
    const launching = launchViaSpawner(spawner, request);
    events().pipe(1, pipe());
    events().pipe(2, pipe());
    const launch = await launching;
    expect(launch.pid).toBeUndefined();
    launch.kill();
    events().pid(victim.pid!);
    expect(launch.pid).toBe(victim.pid);
    expect(await signal).toBe('SIGKILL');
  });

  it('a pid that arrived after the pipes is the launch pid (not the one seen when the pipes came)', async () => {
    const { spawner, events } = scripted();
    const launching = launchViaSpawner(spawner, request);
    events().pipe(1, pipe());
    events().pipe(2, pipe());
    const launch = await launching;
    events().pid(4242);
    expect(launch.pid).toBe(4242);
  });
});
