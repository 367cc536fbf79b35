// A log is known by its normalized URL: the witness's memory and its configuration name it once, however
// it is spelled (case, a default port, a trailing slash).
import { describe, expect, it } from 'vitest';
import { normalizeLogUrl, parseConfig, WitnessError } from '../src/index.js';

describe('log URLs', () => {
  it('normalizeLogUrl: scheme and host lowercased, a default port and trailing slashes dropped', () => {
    expect(normalizeLogUrl('HTTP://Log.Example:80/')).toBe('http://log.example');
    expect(normalizeLogUrl('https://LOG.example:443/v1//')).toBe('https://log.example/v1');
    expect(normalizeLogUrl('http://log.example:8080')).toBe('http://log.example:8080');
    expect(() => normalizeLogUrl('ftp://log.example')).toThrow(WitnessError);
  });

  it('the configuration names each log once, by its normalized URL', () => {
    const key = 'ab'.repeat(32);
    const config = parseConfig(
      ['--log', 'HTTP://Log.Example:80/', '--log', `http://log.example=${key}`, '--key-file', 'k'],
      {},
    );
    expect(config.logs).toEqual([{ url: 'http://log.example', key }]);
    expect(() =>
      parseConfig(
        ['--log', `http://x=${key}`, '--log', `http://X/=${'cd'.repeat(32)}`, '--key-file', 'k'],
        {},
      ),
    ).toThrow(/BadConfig: .*two keys/);
    expect(() => parseConfig(['--log', 'http://x/?a=1', '--key-file', 'k'], {})).toThrow(/BadConfig/);
  });
});
