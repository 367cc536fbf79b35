// The quota arithmetic: slots from a namespace's ResourceQuotas for sandbox pods of one footprint. Ephemeral
// storage (every sandbox pod requests = limits `diskBytes` of it) binds exactly like memory.
import type { V1ResourceQuota } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { namespaceSlots, slotsFromQuotas } from './capacity.js';

const GiB = 1024n ** 3n;
const quota = (hard: Record<string, string>, used: Record<string, string> = {}): V1ResourceQuota => ({
  spec: { hard },
  status: { hard, used },
});
const pod = { memoryBytes: 512n * 1024n ** 2n, cpuMillis: undefined, diskBytes: GiB };

describe('slotsFromQuotas', () => {
  it('counts requests.ephemeral-storage, limits.ephemeral-storage and the bare ephemeral-storage key', () => {
    for (const key of ['requests.ephemeral-storage', 'limits.ephemeral-storage', 'ephemeral-storage']) {
      expect(slotsFromQuotas([quota({ [key]: '3Gi' }, { [key]: '1Gi' })], pod), key).toEqual({
        total: 3,
        free: 2,
      });
    }
  });

  it('takes the smallest answer across memory, pods and ephemeral storage', () => {
    const quotas = [
      quota({ 'requests.memory': '8Gi', pods: '10' }, { 'requests.memory': '0', pods: '0' }),
      quota({ 'limits.ephemeral-storage': '2500M' }, { 'limits.ephemeral-storage': '1Gi' }),
    ];
    // 2500M = 2.33 GiB: 2 sandboxes of 1 GiB in all, 1 beside the one already using 1 GiB
    expect(slotsFromQuotas(quotas, pod)).toEqual({ total: 2, free: 1 });
  });

  it('leaves no slot when the storage in use has reached the quota', () => {
    expect(
      slotsFromQuotas([quota({ 'ephemeral-storage': '2Gi' }, { 'ephemeral-storage': '2Gi' })], pod),
    ).toEqual({ total: 2, free: 0 });
  });
});

describe('namespaceSlots', () => {
  it("measures an ephemeral-storage quota in sandboxes of the driver's disk", () => {
    const quotas = [quota({ 'requests.ephemeral-storage': '4Gi' }, { 'requests.ephemeral-storage': '1Gi' })];
    expect(namespaceSlots(quotas, 1, 16, GiB)).toEqual({ total: 4, free: 3 });
    expect(namespaceSlots(quotas, 1, 16, 2n * GiB)).toEqual({ total: 2, free: 1 });
  });

  it('falls back to the cap on live sandboxes when no quota constrains sandbox pods', () => {
    expect(namespaceSlots([quota({ secrets: '3' })], 5, 16, GiB)).toEqual({ total: 16, free: 11 });
  });
});
