// An imported image is a directory on the host (<imagesDir>/<name>, reachable by every host user): a tarball's
// setuid or setgid bits must not become setuid files there — a setuid-root shell in an untrusted tarball,
// extracted by a root driver, would be a root shell for any host user. Inside the sandbox they do nothing
// anyway (bubblewrap sets no_new_privs), so dropping them changes nothing the image's commands see.
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { writeTar } from '@everdict/placement';
import { describe, expect, it } from 'vitest';
import { importImage } from '../src/images.js';
import { tempDir } from './helpers.js';

describe('importImage', () => {
  it('drops setuid and setgid bits from what it extracts onto the host', async () => {
    const imagesDir = join(tempDir(), 'images');
    const tarball = await writeTar([
      { type: 'directory', path: 'bin', mode: 0o2755 },
      { type: 'file', path: 'bin/rootshell', mode: 0o6755, data: new TextEncoder().encode('#!/bin/sh\n') },
      { type: 'directory', path: 'tmp', mode: 0o1777 },
    ]);
    const image = await importImage(imagesDir, 'suid', tarball);
    const mode = (path: string) => lstatSync(join(image.root, path)).mode & 0o7777;
    expect(mode('bin/rootshell')).toBe(0o755);
    expect(mode('bin')).toBe(0o755);
    expect(mode('tmp')).toBe(0o1777); // the sticky bit stays: it grants nothing
  });
});
