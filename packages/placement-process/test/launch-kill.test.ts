// A kill of a command started through the spawner reaches its process even when the spawner reports the pid
// after the pipes (the launch resolves on the pipes): the kill is remembered and sent as the pid arrives.
// And a kill after the process was reaped (its output not yet read) sends nothing: its pids are free for
// the kernel to hand out again, and a SIGKILL there would hit whoever got them.
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { launchInline, launchViaSpawner } from '../src/launch.js';
import type { SpawnEvents, Spawner, SpawnRequest } from '../src/spawner/client.js';

const request: SpawnRequest = {
  file: 'sleep',
  args: ['30'],
  env: {},
  user: null,
  join: null,
  leave: null,
  status: false,
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

/** A process standing in for whoever got a freed pid: how it ends tells whether our SIGKILL reached it. */
function bystander() {
  const child = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
  const ended = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)));
  return {
    pid: child.pid!,
    /** The signal it died of. */
    ended,
    /** SIGTERMs it and reports the signal it died of: SIGKILL if one had been sent to it before. */
    endedBy: async () => {
      child.kill('SIGTERM');
      return ended;
    },
  };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('launchViaSpawner kill', () => {
  it('a kill before the pid arrived is sent to the process group as it arrives', async () => {
    const victim = bystander();
    const { spawner, events } = scripted();
    const launching = launchViaSpawner(spawner, request);
    events().pipe(1, pipe());
    events().pipe(2, pipe());
    const launch = await launching;
    expect(launch.pid).toBeUndefined();
    launch.kill();
    events().pid(victim.pid);
    expect(launch.pid).toBe(victim.pid);
    expect(await victim.ended).toBe('SIGKILL');
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

  it('a kill after the spawner reported the exit signals neither the old pid nor the old init', async () => {
    const [group, init] = [bystander(), bystander()];
    const { spawner, events } = scripted();
    const launching = launchViaSpawner(spawner, request);
    events().pid(group.pid);
    events().init(init.pid);
    events().pipe(1, pipe()); // never read: the launch has not closed when the kill comes
    events().pipe(2, pipe());
    const launch = await launching;
    events().exit(0, null, null);
    await launch.exited;
    launch.kill();
    expect(await group.endedBy()).toBe('SIGTERM');
    expect(await init.endedBy()).toBe('SIGTERM');
  });

  it('a kill between the loss of the spawner and a late pid message sends nothing', async () => {
    const late = bystander();
    const { spawner, events } = scripted();
    const launching = launchViaSpawner(spawner, request);
    events().lost();
    const launch = await launching;
    launch.kill();
    events().init(late.pid); // a message that was already on its way when the spawner died
    expect(await late.endedBy()).toBe('SIGTERM');
  });
});

const noCgroups = { join: () => undefined, leave: () => [] };

describe('launchInline kill', () => {
  it('kills a running command, and sends nothing once it was reaped', async () => {
    const running = launchInline({ ...request, file: 'sleep', args: ['30'] }, noCgroups);
    running.kill();
    expect(await running.closed).toEqual({ code: null, signal: 'SIGKILL', status: null });

    const done = launchInline({ ...request, file: 'echo', args: ['out'] }, noCgroups);
    let out = '';
    done.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    expect(await done.exited).toEqual({ code: 0, signal: null, status: null });
    const kills = vi.spyOn(process, 'kill');
    done.kill();
    expect(kills).not.toHaveBeenCalled();
    expect(await done.closed).toEqual({ code: 0, signal: null, status: null });
    expect(out).toBe('out\n');
  });
});
