// Discovery documents: /version, /api, /apis, /api/v1, /apis/<group>[/<version>] (the legacy,
// unaggregated form; kubectl falls back to it when a server does not answer aggregated discovery).
import { apiGroups, apiResourceList } from './resources.js';

export function versionInfo(): Record<string, string> {
  return {
    major: '1',
    minor: '32',
    gitVersion: 'v1.32.0-everdict-test',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2026-01-01T00:00:00Z',
    goVersion: 'go1.23.4',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

function groupDocument(name: string, version: string) {
  const gv = { groupVersion: `${name}/${version}`, version };
  return { name, versions: [gv], preferredVersion: gv };
}

/** The discovery document at `pathname`, or undefined when the path is not a discovery path. */
export function discovery(pathname: string, serverAddress: string): unknown {
  const path = pathname.replace(/\/+$/, '');
  if (path === '/version') return versionInfo();
  if (path === '/api') {
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
    };
  }
  if (path === '/apis') {
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: apiGroups().map((g) => groupDocument(g.name, g.version)),
    };
  }
  if (path === '/api/v1') return apiResourceList('', 'v1');
  const group = /^\/apis\/([^/]+)$/.exec(path);
  if (group) {
    const found = apiGroups().find((g) => g.name === group[1]);
    return found
      ? { kind: 'APIGroup', apiVersion: 'v1', ...groupDocument(found.name, found.version) }
      : undefined;
  }
  const groupVersion = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
  if (groupVersion) return apiResourceList(groupVersion[1] ?? '', groupVersion[2] ?? '');
  return undefined;
}
