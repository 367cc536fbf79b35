// A log's answer read with a cap, for the wire contract's readers (the witness, runrecord's `verify --log`
// and `check-group`): a hostile or broken log must not make a reader hold whatever it streams. A declared
// `content-length` past the cap is refused without reading a byte; a streamed body is cancelled once past it.

/** The body as UTF-8 text, or `undefined` when it is larger than `maxBytes` (the stream is then cancelled). */
export async function readAnswer(res: Response, maxBytes: number): Promise<string | undefined> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
