import { describe, expect, it } from 'vitest';
import {
  COMMAND_TAIL_BYTES,
  CommandResult,
  CommandSubject,
  commandImage,
  Harness,
  RunSpec,
} from './index.js';

describe('command runs', () => {
  it('an argv alone is a command subject; its image is then `default`', () => {
    const s = CommandSubject.parse({ command: ['true'] });
    expect(commandImage(s)).toBe('default');
    expect(commandImage(CommandSubject.parse({ command: ['ls'], image: 'alpine:3.20', path: 'a.sh' }))).toBe(
      'alpine:3.20',
    );
    const spec = RunSpec.parse({
      kind: 'command',
      subject: { command: ['echo', 'hi'] },
      origin: { cause: 'member', actor: 'key_1' },
      placement: { where: 'driver', isolation: 'process' },
    });
    expect(spec.subject).toEqual({ command: ['echo', 'hi'] });
  });

  it('outputs.result of a command is {stdout, stderr, truncated}, tails of 64 KiB', () => {
    expect(COMMAND_TAIL_BYTES).toBe(65_536);
    expect(CommandResult.parse({ stdout: 'a', stderr: '', truncated: false })).toEqual({
      stdout: 'a',
      stderr: '',
      truncated: false,
    });
    expect(CommandResult.safeParse({ stdout: 'a', stderr: '' }).success).toBe(false);
    expect(CommandResult.safeParse({ stdout: 'a', stderr: '', truncated: false, exitCode: 0 }).success).toBe(
      false,
    );
  });

  it('a harness names an image and an argv', () => {
    expect(
      Harness.safeParse({ id: 'h', version: '1', image: 'default', command: ['run-case'] }).success,
    ).toBe(true);
    expect(Harness.safeParse({ id: 'h', version: '1', image: 'default', command: [] }).success).toBe(false);
  });
});
