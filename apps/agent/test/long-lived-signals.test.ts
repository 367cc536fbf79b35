// The serve loop's signal lives as long as the agent host: each lease poll (and each wait for a tool call's
// resolution, under its lease's signal) joins it to the call's own timeout for that call only. Once the call
// has ended, aborting the long-lived signal reaches none of the requests it made. With `AbortSignal.any` each
// would stay linked (Node 20 keeps every signal it ever joined to a source until that source aborts:
// nodejs/node#55351) — one per lease poll, for the host's life.
import { describe, expect, it } from 'vitest';
import { HttpControlPlane } from '../src/http/http-control-plane.js';

describe('calls under the serve loop’s long-lived signal', () => {
  it('each ended lease poll is unlinked from it', async () => {
    const requests: Request[] = [];
    const answering: typeof fetch = async (input, init) => {
      const req = new Request(input, init);
      requests.push(req);
      return new Response(JSON.stringify({ leases: [] }), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    };
    const cp = new HttpControlPlane({ url: 'http://127.0.0.1:9', token: 'tok', fetch: answering });
    const serving = new AbortController();
    for (let i = 0; i < 30; i++)
      expect(await cp.lease({ free: 1, holder: 'h1', waitMs: 0, signal: serving.signal })).toEqual([]);
    expect(requests).toHaveLength(30);
    serving.abort(new Error('host stopped'));
    expect(requests.filter((r) => r.signal.aborted)).toHaveLength(0);
  });

  it('a lease poll in flight ends when the serve loop stops', async () => {
    let seen: Request | undefined;
    // Both Requests are held: a Request follows its signal's abort only while it lives, and nothing else holds
    // a hung one here (request-timeout.test.ts).
    const hung: unknown[] = [];
    const hanging: typeof fetch = (input, init) => {
      const req = new Request(input, init);
      hung.push(input, req);
      seen = req;
      return new Promise<Response>((_, reject) =>
        req.signal.addEventListener('abort', () => reject(req.signal.reason), { once: true }),
      );
    };
    const cp = new HttpControlPlane({ url: 'http://127.0.0.1:9', token: 'tok', fetch: hanging });
    const serving = new AbortController();
    const poll = cp.lease({ free: 1, holder: 'h1', waitMs: 20_000, signal: serving.signal });
    while (!seen) await new Promise((r) => setImmediate(r));
    serving.abort(new Error('host stopped'));
    await expect(poll).rejects.toBeDefined();
    expect(seen.signal.aborted).toBe(true);
    expect(hung).toHaveLength(2);
  });
});
