import { describe, expect, it } from 'vitest';
import { announceBootstrap } from './bootstrap-banner.js';
import { silentLogger } from './logger.js';

const KEY = 'evd_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';

describe('bootstrap banner', () => {
  it('prints a generated key once, as the export line the README quickstart starts from', () => {
    let out = '';
    announceBootstrap(
      silentLogger(),
      { tenantId: 'default', tenantCreated: true, keyCreated: true, generatedKey: KEY },
      'http://localhost:8787',
      (text) => {
        out += text;
      },
    );
    expect(out).toContain(`    export EVERDICT=http://localhost:8787 KEY=${KEY}\n`);
  });

  it('prints no key on a later start, nor for an explicit key', () => {
    let out = '';
    const write = (text: string) => {
      out += text;
    };
    announceBootstrap(
      silentLogger(),
      { tenantId: 'default', tenantCreated: false, keyCreated: false },
      'x',
      write,
    );
    announceBootstrap(
      silentLogger(),
      { tenantId: 'default', tenantCreated: true, keyCreated: true },
      'x',
      write,
    );
    expect(out).not.toContain('export');
    expect(out).toContain('already has an admin key');
  });
});
