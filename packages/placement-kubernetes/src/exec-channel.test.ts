// Which exec upgrade refusals mean "this cluster does not speak v5" (fall back to v4) and which do not.
import { describe, expect, it } from 'vitest';
import { isProtocolRefusal, UpgradeRefused } from './exec-channel.js';

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  });

describe('isProtocolRefusal', () => {
  it("is the kubelet's bare 403 from its websocket handshake (a cluster before 1.30)", () => {
    expect(isProtocolRefusal(new UpgradeRefused(403, ''))).toBe(true);
  });

  it('is a refusal that names the protocol', () => {
    expect(isProtocolRefusal(new UpgradeRefused(400, 'unable to negotiate protocol v5.channel.k8s.io'))).toBe(
      true,
    );
  });

  it("is not the apiserver's own refusals: RBAC, a missing pod, a stopped container, bad credentials", () => {
    const rbac = status(
      403,
      'Forbidden',
      'pods "p" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "n"',
    );
    expect(isProtocolRefusal(new UpgradeRefused(403, rbac))).toBe(false);
    expect(isProtocolRefusal(new UpgradeRefused(404, status(404, 'NotFound', 'pods "p" not found')))).toBe(
      false,
    );
    const stopped = status(400, 'BadRequest', 'container sandbox is not valid for pod p');
    expect(isProtocolRefusal(new UpgradeRefused(400, stopped))).toBe(false);
    expect(isProtocolRefusal(new UpgradeRefused(401, ''))).toBe(false);
  });
});
