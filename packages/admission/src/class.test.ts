import { describe, expect, it } from 'vitest';
import { assignClass, DEFAULT_CLASS, isAutonomous } from './class.js';

describe('class assignment', () => {
  it('defaults agent- and event-caused runs to background, members to interactive', () => {
    expect(DEFAULT_CLASS).toMatchObject({ member: 'interactive', run: 'background', event: 'background' });
    expect(assignClass({ cause: 'member' })).toBe('interactive');
    expect(assignClass({ cause: 'event' })).toBe('background');
    expect(assignClass({ cause: 'api', causedByRunId: 'x' })).toBe('background');
    expect(assignClass({ cause: 'ci' })).toBe('batch');
  });

  it('honors a requested class, but autonomous work never gets interactive', () => {
    expect(assignClass({ cause: 'member', class: 'batch' })).toBe('batch');
    expect(assignClass({ cause: 'event', class: 'interactive' })).toBe('background');
    expect(assignClass({ cause: 'schedule', class: 'batch' })).toBe('batch');
    expect(isAutonomous({ cause: 'member', causedByRunId: 'r' })).toBe(true);
  });
});
