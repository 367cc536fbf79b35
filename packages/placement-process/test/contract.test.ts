// The process driver against the driver contract suite, on real bubblewrap.
import { describeDriverContract, posixCommands } from '@everdict/placement/contract';
import { expect, it } from 'vitest';
import { makeDriver, removeDriverDirs, requireBwrap } from './helpers.js';

it('has real bubblewrap (≥ 0.8) to run on', () => {
  expect(requireBwrap()).toMatch(/^bubblewrap /);
});

describeDriverContract('process', {
  make: ({ slots }) => makeDriver(slots === undefined ? {} : { slots }),
  close: (driver) => removeDriverDirs(driver as ReturnType<typeof makeDriver>),
  commands: posixCommands,
  missingImage: 'alpine:3.20',
  tenant: 'pd-contract',
});
