// A handle is plain JSON and outlives the driver instance that made it: another instance on the same state
// directory (a restarted host) provisions the same run idempotently and runs commands in it, keeping its workspace.
// An adopted sandbox takes one of the instance's slots, and its log keeps counting against the cap from the
// bytes the other instance wrote.
import { type SandboxHandle, utf8 } from '@everdict/placement';
import { refusal } from '@everdict/placement/contract';
import { describe, expect, it } from 'vitest';
import type { ProcessDriver } from '../src/process-driver.js';
import { makeDriver, requireBwrap } from './helpers.js';

const labelsOf = (runId: string) => ({ tenant: 'adopt', runId, kind: 'command' });

async function logOf(driver: ProcessDriver, h: SandboxHandle): Promise<string> {
  let text = '';
  for await (const chunk of driver.logs(h)) text += utf8(chunk);
  return text;
}

describe('adoption', () => {
  it('a second instance on the same state directory takes the sandbox over', async () => {
    requireBwrap();
    const first = makeDriver();
    const labels = { tenant: 'adopt', runId: 'r-1', kind: 'command' };
    const h = await first.provision({ labels, env: { GREETING: 'kept' } });
    await first.exec(h, ['sh', '-c', 'echo from-first > state.txt']);
    const second = makeDriver({ stateDir: first.config.stateDir });
    expect(await second.provision({ labels })).toEqual(h);
    const r = await second.exec(JSON.parse(JSON.stringify(h)), [
      'sh',
      '-c',
      'cat state.txt; printenv GREETING',
    ]);
    expect(utf8(r.stdout)).toBe('from-first\nkept\n');
    await second.dispose(h);
    await expect(first.exec(h, ['true'])).rejects.toMatchObject({ code: 'gone' });
  });

  it('an adoption takes a slot: refused with capacity when every slot is taken, the sandbox left as it was', async () => {
    requireBwrap();
    const first = makeDriver();
    const h1 = await first.provision({ labels: labelsOf('cap-1') });
    const second = makeDriver({ stateDir: first.config.stateDir, slots: 1 });
    const h2 = await second.provision({ labels: labelsOf('cap-2') });
    await refusal(second.exec(h1, ['true']), 'capacity');
    await refusal(second.provision({ labels: labelsOf('cap-1') }), 'capacity');
    expect(await second.capacity()).toMatchObject({ slotsTotal: 1, slotsFree: 0 });
    // not taken over: the first instance goes on with it
    expect((await first.exec(h1, ['true'])).exitCode).toBe(0);
    // with its slot free again, the second instance adopts it
    await second.dispose(h2);
    expect((await second.exec(h1, ['true'])).exitCode).toBe(0);
    expect(await second.capacity()).toMatchObject({ slotsTotal: 1, slotsFree: 0 });
    await second.dispose(h1);
  });

  it("an adopted sandbox's log counts the bytes another instance wrote against the cap", async () => {
    requireBwrap();
    const cap = 100;
    const first = makeDriver({ logCapBytes: cap });
    const h = await first.provision({ labels: labelsOf('log-1') });
    const print = (c: string) => ['sh', '-c', `printf '%60s' '' | tr ' ' ${c}`];
    await first.exec(h, print('a'));
    const second = makeDriver({ stateDir: first.config.stateDir, logCapBytes: cap });
    expect(utf8((await second.exec(h, print('b'))).stdout)).toBe('b'.repeat(60));
    const capped = `${'a'.repeat(60)}${'b'.repeat(40)}\n[everdict: log capped at ${cap} bytes]\n`;
    expect(await logOf(second, h)).toBe(capped);
    // adopted again past the cap: nothing more, and no second note
    const third = makeDriver({ stateDir: first.config.stateDir, logCapBytes: cap });
    await third.exec(h, print('c'));
    expect(await logOf(third, h)).toBe(capped);
    await third.dispose(h);
  });
});
