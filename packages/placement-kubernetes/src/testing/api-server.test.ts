// The test API server's wire shapes, read with plain HTTPS and WebSocket clients: auth, watch events
// (ERROR 410 on a compacted version, BOOKMARK), quota admission and status, and the exec channel protocol.
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ChildProcessRunner, startTestApiServer, type TestApiServer } from './index.js';

const runner = new ChildProcessRunner();
let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer({ runner, namespaces: ['wire'], bookmarkIntervalMs: 50 });
});
afterAll(async () => {
  await server?.close();
});

function call(
  method: string,
  path: string,
  body?: unknown,
  token = server.token,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        method,
        path,
        ca: server.certificate,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => {
          text += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The first `count` lines of a watch. */
function watchLines(path: string, count: number): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    const lines: Record<string, unknown>[] = [];
    let buffered = '';
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        ca: server.certificate,
        headers: { Authorization: `Bearer ${server.token}` },
      },
      (res) => {
        res.on('data', (d: Buffer) => {
          buffered += d.toString();
          for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
            lines.push(JSON.parse(buffered.slice(0, nl)));
            buffered = buffered.slice(nl + 1);
          }
          if (lines.length >= count) {
            req.destroy();
            resolve(lines.slice(0, count));
          }
        });
        res.on('end', () => resolve(lines));
      },
    );
    req.on('error', (e) => ((e as { code?: string }).code === 'ECONNRESET' ? undefined : reject(e)));
    req.end();
  });
}

const pod = (name: string, command: string[], extra: Record<string, unknown> = {}) => ({
  metadata: { name },
  spec: {
    restartPolicy: 'Never',
    containers: [
      { name: 'c', image: 'busybox:1.36', command, resources: { limits: { cpu: '250m', memory: '64Mi' } } },
    ],
    ...extra,
  },
});

async function running(name: string): Promise<void> {
  for (;;) {
    const got = await call('GET', `/api/v1/namespaces/wire/pods/${name}`);
    if ((JSON.parse(got.body) as { status?: { phase?: string } }).status?.phase === 'Running') return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the test API server on the wire', () => {
  it('refuses a request without the bearer token with a 401 Status', async () => {
    const r = await call('GET', '/api/v1/namespaces/wire/pods', undefined, 'wrong');
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', code: 401, reason: 'Unauthorized' });
  });

  it('answers a watch from a compacted version with one ERROR event carrying a 410 Expired Status', async () => {
    const before = server.resourceVersion;
    await call('POST', '/api/v1/namespaces/wire/configmaps', { metadata: { name: 'bump' } });
    server.compact();
    const lines = await watchLines(
      `/api/v1/namespaces/wire/configmaps?watch=true&resourceVersion=${before}`,
      1,
    );
    expect(lines).toEqual([
      {
        type: 'ERROR',
        object: expect.objectContaining({ kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 }),
      },
    ]);
  });

  it('sends BOOKMARK events carrying only the version reached, when asked for', async () => {
    const rv = server.resourceVersion;
    const [event] = await watchLines(
      `/api/v1/namespaces/wire/pods?watch=true&resourceVersion=${rv}&allowWatchBookmarks=true`,
      1,
    );
    expect(event).toEqual({
      type: 'BOOKMARK',
      object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: rv, creationTimestamp: null } },
    });
  });

  it('admits pods within a ResourceQuota, refuses past it with 403, and counts status.used', async () => {
    await call('POST', '/api/v1/namespaces/wire/resourcequotas', {
      metadata: { name: 'q' },
      spec: { hard: { pods: '1', 'limits.cpu': '1' } },
    });
    expect((await call('POST', '/api/v1/namespaces/wire/pods', pod('first', ['sleep', '30']))).status).toBe(
      201,
    );
    const refused = await call('POST', '/api/v1/namespaces/wire/pods', pod('second', ['sleep', '30']));
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).message).toBe(
      'pods "second" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1',
    );
    const quota = JSON.parse((await call('GET', '/api/v1/namespaces/wire/resourcequotas/q')).body);
    expect(quota.status).toEqual({
      hard: { pods: '1', 'limits.cpu': '1' },
      used: { pods: '1', 'limits.cpu': '250m' },
    });
    await call('DELETE', '/api/v1/namespaces/wire/pods/first?gracePeriodSeconds=0');
    await call('DELETE', '/api/v1/namespaces/wire/resourcequotas/q');
  });

  it('counts ephemeral-storage against a quota like memory (403 past it), without demanding it of pods', async () => {
    await call('POST', '/api/v1/namespaces/wire/resourcequotas', {
      metadata: { name: 'disk' },
      spec: { hard: { 'requests.ephemeral-storage': '1Gi', 'limits.ephemeral-storage': '1Gi' } },
    });
    const withDisk = (name: string) => ({
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image: 'busybox:1.36',
            command: ['sleep', '30'],
            resources: { limits: { cpu: '250m', memory: '64Mi', 'ephemeral-storage': '600Mi' } },
          },
        ],
      },
    });
    // not in the apiserver's validation set (cpu, memory): a pod stating none counts 0
    expect((await call('POST', '/api/v1/namespaces/wire/pods', pod('no-disk', ['sleep', '30']))).status).toBe(
      201,
    );
    expect((await call('POST', '/api/v1/namespaces/wire/pods', withDisk('disk-a'))).status).toBe(201);
    const refused = await call('POST', '/api/v1/namespaces/wire/pods', withDisk('disk-b'));
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      details: { name: 'disk-b', kind: 'pods' },
      message:
        'pods "disk-b" is forbidden: exceeded quota: disk, requested: limits.ephemeral-storage=600Mi,requests.ephemeral-storage=600Mi, used: limits.ephemeral-storage=600Mi,requests.ephemeral-storage=600Mi, limited: limits.ephemeral-storage=1Gi,requests.ephemeral-storage=1Gi',
    });
    const quota = JSON.parse((await call('GET', '/api/v1/namespaces/wire/resourcequotas/disk')).body);
    expect(quota.status.used).toEqual({
      'requests.ephemeral-storage': '600Mi',
      'limits.ephemeral-storage': '600Mi',
    });
    for (const name of ['no-disk', 'disk-a'])
      await call('DELETE', `/api/v1/namespaces/wire/pods/${name}?gracePeriodSeconds=0`);
    await call('DELETE', '/api/v1/namespaces/wire/resourcequotas/disk');
  });

  it('decodes a Lease MicroTime as the apiserver does: six fractional digits, or 400', async () => {
    const lease = (name: string, renewTime: string) => ({
      metadata: { name },
      spec: { holderIdentity: 'me', leaseDurationSeconds: 30, renewTime },
    });
    const path = '/apis/coordination.k8s.io/v1/namespaces/wire/leases';
    const millis = await call('POST', path, lease('millis', '2026-12-04T20:38:35.123Z'));
    expect(millis.status).toBe(400);
    expect(JSON.parse(millis.body)).toMatchObject({
      kind: 'Status',
      reason: 'BadRequest',
      code: 400,
      message:
        'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-12-04T20:38:35.123Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".123Z" as ".000000"',
    });
    const micros = await call('POST', path, lease('micros', '2026-12-04T20:38:35.123000Z'));
    expect(micros.status).toBe(201);
    const renewed = await call('PUT', `${path}/micros`, lease('micros', '2026-12-04T20:38:36.5Z'));
    expect(renewed.status).toBe(400);
  });

  it("refuses an exec protocol it does not speak with a bare 403, as the kubelet's handshake does", async () => {
    const v4only = await startTestApiServer({ runner, execProtocols: ['v4.channel.k8s.io'] });
    try {
      const ws = new WebSocket(
        `wss://127.0.0.1:${v4only.port}/api/v1/namespaces/default/pods/any/exec?command=true&stdout=true`,
        ['v5.channel.k8s.io'],
        { ca: v4only.certificate, headers: { Authorization: `Bearer ${v4only.token}` } },
      );
      const refusal = await new Promise<{ status: number | undefined; body: string }>((resolve) => {
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => {
            body += d.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode, body }));
        });
      });
      expect(refusal).toEqual({ status: 403, body: '' });
    } finally {
      await v4only.close();
    }
  });

  it('speaks the v5 exec channels: stdin, close-stdin [255, 0], resize, stdout/stderr, the exit status', async () => {
    await call('POST', '/api/v1/namespaces/wire/pods', pod('execd', ['sleep', '30']));
    await running('execd');
    const query =
      'command=sh&command=-c&command=cat%3B%20echo%20bye%20%3E%262%3B%20exit%203&stdin=true&stdout=true&stderr=true&tty=false';
    const ws = new WebSocket(
      `wss://127.0.0.1:${server.port}/api/v1/namespaces/wire/pods/execd/exec?${query}`,
      ['v5.channel.k8s.io'],
      {
        ca: server.certificate,
        headers: { Authorization: `Bearer ${server.token}` },
      },
    );
    const frames: Buffer[] = [];
    ws.on('message', (d: Buffer) => frames.push(d));
    await new Promise((r) => ws.once('open', r));
    expect(ws.protocol).toBe('v5.channel.k8s.io');
    ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('hello\n')]));
    ws.send(Buffer.concat([Buffer.from([4]), Buffer.from('{"Width":120,"Height":40}')]));
    ws.send(Buffer.from([255, 0]));
    await new Promise((r) => ws.once('close', r));
    const on = (channel: number) =>
      Buffer.concat(frames.filter((f) => f[0] === channel).map((f) => f.subarray(1))).toString();
    expect(on(1)).toBe('hello\n');
    expect(on(2)).toBe('bye\n');
    expect(JSON.parse(on(3))).toEqual({
      metadata: {},
      status: 'Failure',
      message:
        'command terminated with non-zero exit code: error executing command [sh -c cat; echo bye >&2; exit 3], exit code 3',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    expect(runner.resizes).toContainEqual({ columns: 120, rows: 40 });
  });
});
