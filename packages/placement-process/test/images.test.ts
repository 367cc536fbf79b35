// Images: `default` is the host's read-only system directories; a named image is imported from a tarball
// (through the command-line tool) and becomes the sandbox's whole root filesystem; anything else is
// image_not_found. A named image's digest is BLAKE3 of its directory's deterministic tar.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { environmentOf, snapshotDirectory, utf8 } from '@everdict/placement';
import { refusal } from '@everdict/placement/contract';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeDriver, requireBwrap, tempDir } from './helpers.js';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const labels = (runId: string) => ({ tenant: 'images', runId, kind: 'command' });

/** A tiny root filesystem: dash as /bin/sh and cat, with the libraries they load. */
function miniRootTarball(): string {
  const root = join(tempDir(), 'rootfs');
  for (const bin of ['/usr/bin/dash', '/usr/bin/cat']) {
    for (const line of execFileSync('ldd', [bin], { encoding: 'utf8' }).split('\n')) {
      const lib = /(\/\S+) \(0x/.exec(line)?.[1];
      if (!lib) continue;
      mkdirSync(join(root, lib, '..'), { recursive: true });
      copyFileSync(lib, join(root, lib));
    }
  }
  mkdirSync(join(root, 'bin'), { recursive: true });
  copyFileSync('/usr/bin/dash', join(root, 'bin/sh'));
  copyFileSync('/usr/bin/cat', join(root, 'bin/cat'));
  execFileSync('chmod', ['755', join(root, 'bin/sh'), join(root, 'bin/cat')]);
  mkdirSync(join(root, 'etc'));
  execFileSync('sh', ['-c', `echo mini-image > ${join(root, 'etc/motd')}`]);
  const tarball = join(root, '..', 'mini.tar.gz');
  execFileSync('tar', ['-czf', tarball, '-C', root, '.']);
  return tarball;
}

describe('images', () => {
  let tarball = '';
  beforeAll(() => {
    requireBwrap();
    tarball = miniRootTarball();
  });

  it('imports a tarball with the CLI and runs commands on that root filesystem alone', async () => {
    expect(existsSync(cli), `${cli} is missing: build first`).toBe(true);
    const imagesDir = join(tempDir(), 'images');
    const printed = execFileSync(
      process.execPath,
      [cli, 'import-image', 'mini', tarball, '--images-dir', imagesDir],
      {
        encoding: 'utf8',
      },
    );
    const imported = JSON.parse(printed) as { name: string; digest: string; root: string };
    expect(imported).toMatchObject({ name: 'mini', root: join(imagesDir, 'mini') });
    expect(imported.digest).toBe((await snapshotDirectory(join(imagesDir, 'mini'))).address);
    const again = JSON.parse(
      execFileSync(process.execPath, [cli, 'import-image', 'mini', tarball, '--images-dir', imagesDir], {
        encoding: 'utf8',
      }),
    ) as { digest: string };
    expect(again.digest).toBe(imported.digest);

    const driver = makeDriver({ imagesDir });
    const h = await driver.provision({ image: 'mini', labels: labels('mini-1') });
    expect(h.environment).toEqual(environmentOf('process', 'mini', imported.digest));
    const r = await driver.exec(h, [
      '/bin/sh',
      '-c',
      'cat /etc/motd; echo /*; test -e /usr/bin/perl || echo no-host-usr',
    ]);
    expect(utf8(r.stdout)).toBe(
      'mini-image\n/bin /dev /etc /lib /lib64 /proc /tmp /workspace\nno-host-usr\n',
    );
    expect((await driver.exec(h, ['/bin/sh', '-c', 'echo x > /etc/motd'])).exitCode).not.toBe(0);
    expect(utf8((await driver.exec(h, ['sh', '-c', 'echo w > f && cat f'])).stdout)).toBe('w\n');
    // No `script`/`stty` in this image: a pty is refused (unsupported), a pipe stream still runs.
    await refusal(driver.stream(h, ['cat'], { tty: true }), 'unsupported');
    const piped = await driver.stream(h, ['cat']);
    piped.stdin.end('through a pipe');
    expect(await piped.exit).toEqual({ exitCode: 0, signal: null });
  }, 120_000);

  it('refuses any other reference with image_not_found', async () => {
    const driver = makeDriver();
    for (const image of ['alpine:3.20', 'docker.io/library/busybox', 'Mini', '../images', 'no-such-image']) {
      await refusal(driver.provision({ image, labels: labels(`bad-${image}`) }), 'image_not_found');
    }
    expect((await driver.capacity()).slotsFree).toBe(32);
  });

  it('pins nothing for `default`: its digest is null, and it shows the host /usr read-only', async () => {
    const driver = makeDriver();
    const h = await driver.provision({ labels: labels('default-1') });
    expect(h.environment).toEqual(environmentOf('process', 'default', null));
    const r = await driver.exec(h, [
      'sh',
      '-c',
      'test -x /usr/bin/perl && echo has-perl; test -r /etc/ssl/certs && echo has-ssl',
    ]);
    expect(utf8(r.stdout)).toContain('has-perl');
    expect(existsSync('/etc/ssl/certs') ? utf8(r.stdout) : 'has-ssl').toContain('has-ssl');
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).toBeTruthy();
  });
});
