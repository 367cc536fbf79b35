// The log's wire contract as a witness reads it (`@everdict/headlog`'s wire schemas): every answer is
// parsed exactly; anything else — a network error (before or during the body), a non-2xx, a body larger
// than `MAX_ANSWER_BYTES`, a body that is not the route's object — is `LogUnavailable`.
import {
  type Cosignature,
  consistencyProofWire,
  cosignatureAcceptedWire,
  cosignedTreeHeadFromWire,
  cosignedTreeHeadWire,
  logKeyWire,
  readAnswer,
  type SignedTreeHead,
  treeHeadToJson,
} from '@everdict/headlog';
import type { z } from 'zod';
import { WitnessError } from './errors.js';

/**
 * The largest answer read from a log (bytes). The wire contract's answers are small — a consistency proof is
 * at most ~7 KB, an STH with a thousand cosignatures ~250 KB — so a larger body is refused, and the witness
 * stops reading it, rather than holding whatever a hostile or broken log streams.
 */
export const MAX_ANSWER_BYTES = 1 << 20;

/** The body as text, at most `MAX_ANSWER_BYTES` (headlog's `readAnswer`: the stream is cancelled past the cap). */
async function boundedText(res: Response, url: string): Promise<string> {
  const text = await readAnswer(res, MAX_ANSWER_BYTES);
  if (text === undefined)
    throw new WitnessError('LogUnavailable', `${url}: the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
  return text;
}

async function call<S extends z.ZodType>(schema: S, url: string, init?: RequestInit): Promise<z.output<S>> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
    // Reading the body can fail too (a connection cut mid-body, the timeout): the log did not answer.
    text = await boundedText(res, url);
  } catch (e) {
    if (e instanceof WitnessError) throw e;
    throw new WitnessError('LogUnavailable', `${url}: ${(e as Error).message}`);
  }
  if (!res.ok) throw new WitnessError('LogUnavailable', `${url}: HTTP ${res.status} ${text.slice(0, 200)}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new WitnessError('LogUnavailable', `${url}: the answer is not JSON`);
  }
  const r = schema.safeParse(json);
  if (!r.success)
    throw new WitnessError('LogUnavailable', `${url}: the answer is not the wire contract's object`);
  return r.data;
}

export class LogClient {
  constructor(readonly base: string) {}

  private url(path: string): string {
    return new URL(path, this.base.endsWith('/') ? this.base : `${this.base}/`).toString();
  }

  async key(): Promise<{ publicKey: string; logId: string }> {
    const k = await call(logKeyWire, this.url('log/key'));
    return { publicKey: k.public_key, logId: k.log_id };
  }

  async latest(): Promise<{ sth: SignedTreeHead; cosignatures: Cosignature[] }> {
    return cosignedTreeHeadFromWire(await call(cosignedTreeHeadWire, this.url('log/sth')));
  }

  async consistency(from: number, to: number): Promise<Uint8Array[]> {
    const p = await call(consistencyProofWire, this.url(`log/proof/consistency?from=${from}&to=${to}`));
    return p.proof;
  }

  async postCosignature(sth: SignedTreeHead, cosignature: Cosignature): Promise<number> {
    const r = await call(cosignatureAcceptedWire, this.url('log/cosignatures'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sth: treeHeadToJson(sth), cosignature }),
    });
    return r.cosignatures;
  }
}
