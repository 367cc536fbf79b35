// The driver contract suite: behaviour every placement driver must show, written once and run against
// each (inline here; process and kubernetes in their packages). A driver passes it or does not ship.
//   import { describeDriverContract, posixCommands } from '@everdict/placement/contract';
//   describeDriverContract('process', { make: ({ slots }) => new ProcessDriver({ slots }), commands: posixCommands, missingImage: 'alpine:3.20' });
import { afterEach, beforeEach, describe } from 'vitest';
import { execTests } from './contract/exec-tests.js';
import type { DriverFixture } from './contract/fixture.js';
import { SuiteHarness } from './contract/harness.js';
import { lifecycleTests } from './contract/lifecycle.js';
import { filesTests, logTests, snapshotTests, streamTests, usageTests } from './contract/optional-tests.js';

export { type ContractCommands, type DriverFixture, posixCommands } from './contract/fixture.js';
export { collect, refusal } from './contract/harness.js';

export function describeDriverContract(name: string, fixture: DriverFixture): void {
  describe(`Driver contract: ${name}`, () => {
    let harness: SuiteHarness;
    const h = () => harness;
    beforeEach(() => {
      harness = new SuiteHarness(fixture);
    });
    afterEach(async () => {
      await harness.cleanup();
    });
    describe('lifecycle', () => lifecycleTests(h));
    describe('exec', () => execTests(h));
    describe('stream', () => streamTests(h));
    describe('logs', () => logTests(h));
    describe('snapshot and restore', () => snapshotTests(h));
    describe('files', () => filesTests(h));
    describe('usage', () => usageTests(h));
  });
}
