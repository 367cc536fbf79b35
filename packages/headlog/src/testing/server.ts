// A log served over real HTTP for tests — the wire contract of `../wire.ts` answered from `TestLog`s, every
// body built by the wire module's builders and checked against its schema before it is sent. It stands in
// for the control plane's `/log` routes (issue 18 §2, apps/control-plane/src/http/log.ts). Each route family reads one
// of four views (`sth`, `proofs`, `runs`, `groups`), which a test may point at different logs to stage a
// log that shows different readers different trees.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { consistencyProofObject, inclusionProofObject } from '../commands.js';
import { isHeadLogError } from '../errors.js';
import { idHash } from '../leaf.js';
import { logIdOf, parseTreeHeadJson, type SignedTreeHead } from '../tree-head.js';
import {
  consistencyProofWire,
  consistencyQuery,
  cosignatureAcceptedWire,
  cosignatureSubmissionWire,
  cosignedTreeHeadToWire,
  groupProofWire,
  inclusionProofWire,
  inclusionQuery,
  loggedLeafToWire,
  loggedLeavesWire,
  logKeyToWire,
  type Problem,
  problemWire,
  treeSizeQuery,
} from '../wire.js';
import type { TestLog } from './test-log.js';

export interface LogViews {
  /** `GET /log/sth`, `/log/sth/:size`, `/log/key`, `POST /log/cosignatures` */
  sth: TestLog;
  /** `GET /log/proof/*` */
  proofs: TestLog;
  /** `GET /runs/:id/log` */
  runs: TestLog;
  /** `GET /groups/:id/log`, `/groups/:id/proof` */
  groups: TestLog;
}

export interface TestLogServer {
  readonly url: string;
  /** Serves `log` on every route, or some routes from other logs (a split view). */
  serve(log: TestLog, overrides?: Partial<LogViews>): void;
  readonly views: Readonly<LogViews>;
  /** How many requests each route family answered (`sth`, `proofs`, `runs`, `groups`, `cosign`, `key`). */
  readonly hits: Readonly<Record<string, number>>;
  close(): Promise<void>;
}

export interface TestLogServerOptions {
  log: TestLog;
  /** API key → tenant id, for the run and group routes. */
  apiKeys?: Record<string, string>;
}

class Refusal {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {}
}

const STATUS: Record<string, number> = {
  MalformedProof: 400,
  MalformedTreeHead: 400,
  BadSignature: 400,
  InvalidKey: 403,
  OutOfRange: 404,
  MissingNode: 404,
};

function query<T>(
  schema: { safeParse(x: unknown): { success: true; data: T } | { success: false } },
  url: URL,
): T {
  const r = schema.safeParse(Object.fromEntries(url.searchParams));
  if (!r.success) throw new Refusal(400, 'MalformedQuery', 'query parameters are not the route’s');
  return r.data;
}

function treeAt(log: TestLog, size: number | undefined): SignedTreeHead {
  const sth = size === undefined ? log.latest() : log.sthAt(size);
  if (!sth)
    throw new Refusal(
      404,
      'NoTreeHead',
      size === undefined ? 'the log has signed no tree head' : `no tree head at size ${size}`,
    );
  return sth;
}

function leavesIn(log: TestLog, sth: SignedTreeHead, indexes: number[]) {
  return indexes.map((index) =>
    loggedLeafToWire({ leaf: log.leafAt(index), index, path: log.inclusionProof(index, sth.treeSize) }),
  );
}

async function body(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new Refusal(400, 'MalformedBody', 'the body is not JSON');
  }
}

export async function startTestLogServer(options: TestLogServerOptions): Promise<TestLogServer> {
  const apiKeys = options.apiKeys ?? {};
  let views: LogViews = { sth: options.log, proofs: options.log, runs: options.log, groups: options.log };
  const hits: Record<string, number> = {};
  const hit = (name: string) => {
    hits[name] = (hits[name] ?? 0) + 1;
  };

  const tenantOf = (req: IncomingMessage): string => {
    const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    const tenant = m ? apiKeys[m[1]!] : undefined;
    if (tenant === undefined)
      throw new Refusal(401, 'unauthenticated', 'an API key is required: Authorization: Bearer <key>');
    return tenant;
  };

  async function route(req: IncomingMessage, url: URL): Promise<{ status: number; json: unknown }> {
    const path = url.pathname;
    const get = req.method === 'GET';
    if (get && path === '/log/key') {
      hit('key');
      const pk = views.sth.key.publicKey;
      return { status: 200, json: logKeyToWire(pk, logIdOf(pk)) };
    }
    if (get && path === '/log/sth') {
      hit('sth');
      const sth = treeAt(views.sth, undefined);
      return { status: 200, json: cosignedTreeHeadToWire(sth, views.sth.cosignaturesOf(sth.treeSize)) };
    }
    let m = /^\/log\/sth\/(0|[1-9][0-9]*)$/.exec(path);
    if (get && m) {
      hit('sth');
      const sth = treeAt(views.sth, Number(m[1]));
      return { status: 200, json: cosignedTreeHeadToWire(sth, views.sth.cosignaturesOf(sth.treeSize)) };
    }
    if (get && path === '/log/proof/inclusion') {
      hit('proofs');
      const q = query(inclusionQuery, url);
      const log = views.proofs;
      if (q.size > log.size || q.index >= q.size) throw new Refusal(404, 'OutOfRange', 'outside the tree');
      const obj = inclusionProofObject({
        leaf: log.leafAt(q.index),
        index: q.index,
        treeSize: q.size,
        root: log.rootAt(q.size),
        path: log.inclusionProof(q.index, q.size),
      });
      inclusionProofWire.parse(obj);
      return { status: 200, json: obj };
    }
    if (get && path === '/log/proof/consistency') {
      hit('proofs');
      const q = query(consistencyQuery, url);
      const log = views.proofs;
      if (q.to > log.size || q.from > q.to) throw new Refusal(404, 'OutOfRange', 'outside the tree');
      const obj = consistencyProofObject({
        oldSize: q.from,
        oldRoot: log.rootAt(q.from),
        newSize: q.to,
        newRoot: log.rootAt(q.to),
        proof: log.consistencyProof(q.from, q.to),
      });
      consistencyProofWire.parse(obj);
      return { status: 200, json: obj };
    }
    if (req.method === 'POST' && path === '/log/cosignatures') {
      hit('cosign');
      const r = cosignatureSubmissionWire.safeParse(await body(req));
      if (!r.success) throw new Refusal(400, 'MalformedBody', 'not a cosignature submission');
      const sth = parseTreeHeadJson(r.data.sth);
      const n = views.sth.addCosignature(sth, r.data.cosignature);
      return {
        status: 201,
        json: cosignatureAcceptedWire.parse({ tree_size: String(sth.treeSize), cosignatures: n }),
      };
    }
    m = /^\/runs\/([^/]+)\/log$/.exec(path);
    if (get && m) {
      hit('runs');
      const tenant = tenantOf(req);
      const log = views.runs;
      const sth = treeAt(log, query(treeSizeQuery, url).size);
      const indexes = log.runLeaves(tenant, decodeURIComponent(m[1]!), sth.treeSize);
      const json = loggedLeavesWire.parse({
        sth: cosignedTreeHeadToWire(sth, log.cosignaturesOf(sth.treeSize)),
        leaves: leavesIn(log, sth, indexes),
      });
      return { status: 200, json };
    }
    m = /^\/groups\/([^/]+)\/(log|proof)$/.exec(path);
    if (get && m) {
      hit('groups');
      const tenant = tenantOf(req);
      const groupId = decodeURIComponent(m[1]!);
      const log = views.groups;
      const sth = treeAt(log, query(treeSizeQuery, url).size);
      const indexes = log.groupLeaves(tenant, groupId, sth.treeSize);
      const base = {
        sth: cosignedTreeHeadToWire(sth, log.cosignaturesOf(sth.treeSize)),
        leaves: leavesIn(log, sth, indexes),
      };
      const json =
        m[2] === 'log'
          ? loggedLeavesWire.parse(base)
          : groupProofWire.parse({ group_hash: idHash(groupId), ...base });
      return { status: 200, json };
    }
    throw new Refusal(404, 'NotFound', `no route ${req.method} ${path}`);
  }

  const server = createServer((req, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://test-log');
    route(req, url)
      .then(({ status, json }) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      })
      .catch((e: unknown) => {
        let refusal: Refusal;
        if (e instanceof Refusal) refusal = e;
        else if (isHeadLogError(e)) refusal = new Refusal(STATUS[e.code] ?? 409, e.code, e.detail);
        else refusal = new Refusal(500, 'Internal', e instanceof Error ? e.message : String(e));
        const problem: Problem = problemWire.parse({
          type: 'about:blank',
          title: refusal.code,
          status: refusal.status,
          code: refusal.code,
          detail: refusal.detail,
        });
        res.writeHead(refusal.status, { 'content-type': 'application/problem+json' });
        res.end(JSON.stringify(problem));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    serve(log, overrides = {}) {
      views = { sth: log, proofs: log, runs: log, groups: log, ...overrides };
    },
    get views() {
      return views;
    },
    hits,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
