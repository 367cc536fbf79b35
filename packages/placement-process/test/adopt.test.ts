// A handle is plain JSON and outlives the driver instance that made it: another instance on the same state
// directory (a restarted host) provisions the same run idempotently and runs commands in it, keeping its workspace.
import { utf8 } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { makeDriver, requireBwrap } from './helpers.js';

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
});
