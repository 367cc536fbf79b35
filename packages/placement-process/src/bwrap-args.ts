// The bubblewrap command line of a sandbox: new user, pid, ipc, uts, cgroup and (unless the network is
// granted) net namespaces; the image's root filesystem read-only; a private /proc, /dev and /tmp; the
// workspace read-write at /workspace; --die-with-parent; a new session. Nothing else of the host is there.
import { accessSync, constants, lstatSync, readlinkSync } from 'node:fs';
import type { NetworkGrant } from '@everdict/placement';
import type { ResolvedImage } from './images.js';

export const WORKSPACE = '/workspace';

/** The host's system directories the `default` image shows (read-only; a symlink stays a symlink). */
const DEFAULT_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
const DEFAULT_FILES_TRY = ['/etc/ssl', '/etc/alternatives'];
const NETWORK_FILES_TRY = ['/etc/resolv.conf', '/etc/hosts', '/etc/nsswitch.conf'];

function defaultRoot(): string[] {
  const args: string[] = [];
  for (const dir of DEFAULT_DIRS) {
    try {
      const st = lstatSync(dir);
      if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
      else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
    } catch {
      // not on this host
    }
  }
  for (const path of DEFAULT_FILES_TRY) args.push('--ro-bind-try', path, path);
  return args;
}

let defaultRootArgs: string[] | undefined;

/** Everything before `--chdir`/`--`: namespaces, root filesystem, /proc, /dev, /tmp, the workspace. */
export function sandboxArgs(image: ResolvedImage, workspace: string, network: NetworkGrant): string[] {
  const args = [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(network === 'granted' ? [] : ['--unshare-net']),
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
  ];
  if (image.kind === 'default') {
    defaultRootArgs ??= defaultRoot();
    args.push(...defaultRootArgs);
  } else {
    args.push('--ro-bind', image.root, '/');
  }
  if (network === 'granted' && image.kind === 'default') {
    for (const path of NETWORK_FILES_TRY) args.push('--ro-bind-try', path, path);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--bind', workspace, WORKSPACE);
  if (image.kind === 'default') args.push('--remount-ro', '/');
  return args;
}

/** A command's working directory inside the sandbox: absolute as given, relative to the workspace otherwise. */
export function sandboxCwd(cwd: string | undefined): string {
  if (cwd === undefined) return WORKSPACE;
  return cwd.startsWith('/') ? cwd : `${WORKSPACE}/${cwd}`;
}

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The environment bubblewrap (and prlimit) themselves run with on the host: nothing from the caller. */
export const HOST_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
});

/**
 * Variables the host's dynamic loader or libc act on (glibc's "unsecure" list and the families it reads):
 * they must never be in bubblewrap's (or prlimit's) own environment, which runs on the host. They reach the
 * command as `--setenv` arguments instead; every other variable goes in as bubblewrap's environment, which
 * — unlike its argv — other host users cannot read (/proc/<pid>/environ is its user's and root's only).
 */
const LOADER_VARS = new Set([
  'GCONV_PATH',
  'GETCONF_DIR',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TMPDIR',
  'TZDIR',
]);

export function actsOnHost(name: string): boolean {
  return /^(LD_|MALLOC_|GLIBC_)/.test(name) || LOADER_VARS.has(name);
}

const programs = new Map<string, string>();

/**
 * A host program's absolute path, looked up on the host's PATH (HOST_ENV) once: the environment bubblewrap
 * and prlimit run with carries the caller's PATH, which must not choose them. A name not found stays as it
 * is (its start then fails: spawn_failed).
 */
export function hostProgram(name: string): string {
  if (name.includes('/')) return name;
  const known = programs.get(name);
  if (known) return known;
  for (const dir of HOST_ENV.PATH!.split(':')) {
    const path = `${dir}/${name}`;
    try {
      accessSync(path, constants.X_OK);
      programs.set(name, path);
      return path;
    } catch {
      // not here
    }
  }
  return name;
}
