// A session held by a runner started with `--driver kubernetes`, against @everdict/placement-kubernetes's
// test API server (HTTPS, real client-node wire shapes; its pods run as bubblewrap sandboxes). No real
// cluster is reachable here: "a pod" means a pod of that server. The built control plane (sessions on runners
// only) places `isolation: container` on the Kubernetes runner: exec, park (the pod's workspace tar) →
// resume on a fresh pod byte for byte, close deletes the pod.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlaneProcess, startControlPlane } from '@everdict/client/testing';
import { startTestApiServer, type TestApiServer } from '@everdict/placement-kubernetes/testing';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiCall, pair, type RunnerProcess, startRunner, waitFor } from './helpers.js';

const NS = 'everdict-sessions';
let cp: ControlPlaneProcess;
let server: TestApiServer;
let runner: RunnerProcess;
let core: CoreV1Api;

beforeAll(async () => {
  server = await startTestApiServer({ namespaces: [NS] });
  const kcDir = mkdtempSync(join(tmpdir(), 'runner-k8s-'));
  const kubeconfig = await server.writeKubeconfig(kcDir, NS);
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig(NS));
  core = kc.makeApiClient(CoreV1Api);
  cp = await startControlPlane({ env: { EVERDICT_SESSIONS: 'runner' } });
  const dir = await pair(cp.url, cp.apiKey, 'kube');
  runner = startRunner(dir, { EVERDICT_RUNNER_DRIVER: 'kubernetes', KUBECONFIG: kubeconfig });
  await waitFor('the runner session channel', async () =>
    runner.logs().includes('session channel open') ? true : undefined,
  );
}, 600_000);
afterAll(async () => {
  if (runner && runner.child.exitCode === null) runner.child.kill('SIGKILL');
  await cp?.stop();
  await server?.close();
});

const api = (method: string, path: string, body?: unknown) => apiCall(cp, method, path, body);
const pods = async () =>
  (await core.listNamespacedPod({ namespace: NS })).items.filter((p) => !p.metadata?.deletionTimestamp);

describe('a session on a Kubernetes pod through a runner (test API server)', () => {
  it('exec in the pod, park → resume on a fresh pod byte for byte, close deletes the pod', async () => {
    const opened = await api('POST', '/sandboxes', {
      ttlSec: 600,
      idleTimeoutSec: 600,
      placement: { where: 'driver', isolation: 'container' },
    });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const id = opened.body.run.id as string;
    expect((await api('GET', `/sandboxes/${id}`)).body.holder).toMatch(/^runner:rnr_/);
    expect((await pods()).length).toBe(1);

    const write = await api('POST', `/sandboxes/${id}/exec`, {
      command: ['sh', '-c', 'printf "\\000\\377k8s" > f.bin && echo kept > a.txt && sha256sum f.bin a.txt'],
    });
    expect(write.status, JSON.stringify(write.body)).toBe(200);
    expect(write.body.exitCode).toBe(0);
    const digest = write.body.stdout as string;

    const parked = await api('POST', `/sandboxes/${id}/suspend`);
    expect(parked.status, JSON.stringify(parked.body)).toBe(200);
    await waitFor('the pod released', async () => ((await pods()).length === 0 ? true : undefined));
    const resumed = await api('POST', `/sandboxes/${id}/resume`, {});
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    const again = await api('POST', `/sandboxes/${id}/exec`, { command: ['sha256sum', 'f.bin', 'a.txt'] });
    expect(again.body.stdout).toBe(digest);

    const closed = await api('POST', `/sandboxes/${id}/close`);
    expect(closed.body.status).toBe('succeeded');
    await waitFor('the pod deleted', async () => ((await pods()).length === 0 ? true : undefined));
  }, 600_000);
});
