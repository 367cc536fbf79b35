// Provisioning the same (tenant, run) again while its sandbox's dispose is still under way: the answer is a new
// sandbox, once the old one is gone — never the handle being disposed (which is `gone` at once). Before, the
// provision answered the old handle, and the next exec on it was refused `gone`.
import { utf8 } from '@everdict/placement';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeDriver, requireBwrap } from './helpers.js';

const driver = makeDriver();
beforeAll(() => {
  requireBwrap();
});

describe('provision during a dispose of the same labels', () => {
  it('answers a fresh sandbox, usable, with an empty workspace', async () => {
    const labels = { tenant: 'dp', runId: 'again', kind: 'sandbox' };
    const first = await driver.provision({ labels });
    await driver.exec(first, ['sh', '-c', 'echo old > note.txt']);
    const disposing = driver.dispose(first);
    const second = await driver.provision({ labels });
    await disposing;
    expect(second).not.toBe(first);
    const r = await driver.exec(second, ['sh', '-c', 'ls -A; echo ok']);
    expect(utf8(r.stdout)).toBe('ok\n');
    expect((await driver.capacity()).slotsFree).toBe(driver.config.slots - 1);
    await driver.dispose(second);
  }, 60_000);
});
