// The spec `run` and `experiment` build from their flags: an eval run's answer key (`--expected`) goes to
// subject.expected, beside the case, and only there.
import { describe, expect, it } from 'vitest';
import { CliError } from '../errors.js';
import { runSpecOf } from './run.js';

const usage = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof CliError && e.code === 'usage' ? e.message : `not usage: ${String(e)}`;
  }
  return 'no error';
};

describe('runSpecOf: eval', () => {
  it('carries --expected as the subject’s answer key, any JSON value, null included', () => {
    for (const [text, value] of [
      ['"Paris"', 'Paris'],
      ['{"sum":4}', { sum: 4 }],
      ['42', 42],
      ['null', null],
    ] as const) {
      const spec = runSpecOf('eval', [], {
        harness: 'qa@1',
        case: 'fr',
        caseSpec: '{"q":"capital of France"}',
        expected: text,
      });
      expect(spec.subject).toEqual({
        harness: { id: 'qa', version: '1' },
        caseId: 'fr',
        caseSpec: { q: 'capital of France' },
        expected: value,
      });
    }
    expect(runSpecOf('eval', [], { harness: 'qa@1', case: 'fr' }).subject).not.toHaveProperty('expected');
  });

  it('refuses --expected that is not JSON, on another kind, or beside --subject', () => {
    expect(usage(() => runSpecOf('eval', [], { harness: 'qa@1', case: 'fr', expected: 'Paris' }))).toBe(
      '--expected is not JSON',
    );
    expect(usage(() => runSpecOf('command', ['true'], { expected: '1' }))).toMatch(
      /^--expected is an eval run/,
    );
    expect(usage(() => runSpecOf('eval', [], { subject: '{}', expected: '1' }))).toMatch(
      /^--expected is an eval run/,
    );
  });
});
