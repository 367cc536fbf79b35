// The built CLI (dist/cli.js) as a child process, on the edges of its input: flags given twice or with an
// '=' in the value, bytes that are not UTF-8, JSON with a member name twice in one object, and standard
// input that cannot be read at all. The tests are independent: they run concurrently (cli-process.ts).
import { closeSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeWire } from '../src/wire.js';
import { pkg, requireBuiltCli, runCli as run } from './cli-process.js';
import { addr, exec, forge, UNIT } from './helpers.js';

const fixture = readFileSync(`${pkg}examples/record.json`, 'utf8');
const head: string = JSON.parse(fixture).head;

/** An ops.json with one accounted execute whose call id is the given UTF-8 (or not) bytes. */
function opsWithCallId(id: Buffer): Buffer {
  const [before, after] = JSON.stringify({
    unit_id: UNIT,
    grants_id: addr(0x22),
    ops: [{ op: 'execute', attestation: addr(1), account: { dispatched: ['@ID@'], resolved: [] } }],
  }).split('@ID@');
  return Buffer.concat([Buffer.from(before!), id, Buffer.from(after!)]);
}

beforeAll(requireBuiltCli);

describe.concurrent('verify flags', () => {
  it('--expect-head=VALUE: the whole rest of the argument is the value', async () => {
    const bad = [`--expect-head=${head}=junk`, `--trust-key=${addr(7)}=${addr(8)}`];
    const [ok, ...refused] = await Promise.all([
      run(['verify', `--expect-head=${head}`], fixture),
      ...bad.map((arg) => run(['verify', arg], fixture)),
    ]);
    expect(ok.code).toBe(0);
    for (const [i, r] of refused.entries()) {
      expect([bad[i], r.code, r.out]).toEqual([bad[i], 2, '']);
      expect(r.err).toMatch(/needs 64 hex digits/);
    }
  });

  it('--expect-head given twice is a usage error, whichever of the two matches', async () => {
    const pairs = [
      [addr(0), head],
      [head, addr(0)],
      [head, head],
    ];
    const results = await Promise.all(
      pairs.map((heads) => run(['verify', '--expect-head', heads[0]!, `--expect-head=${heads[1]}`], fixture)),
    );
    for (const [i, r] of results.entries()) {
      expect([pairs[i], r.code, r.out]).toEqual([pairs[i], 2, '']);
      expect(r.err).toMatch(/--expect-head given twice/);
    }
  });
});

describe.concurrent('input bytes', () => {
  it('UTF-8 call ids build and verify; bytes that are not UTF-8 are MalformedRecord, never U+FFFD', async () => {
    const [ok, latin1, fffd] = await Promise.all([
      run(['build'], opsWithCallId(Buffer.from('café', 'utf8'))),
      // "caf\xE9" (Latin-1) is not UTF-8: refused, not built as "caf\uFFFD".
      run(['build'], opsWithCallId(Buffer.from([0x63, 0x61, 0x66, 0xe9]))),
      run(['build'], opsWithCallId(Buffer.from('caf\uFFFD', 'utf8'))),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.json().segments[0].account.dispatched).toEqual(['café']);
    expect([latin1.code, latin1.json()]).toEqual([1, { error: 'MalformedRecord' }]);

    // A record whose heads were computed over "caf\uFFFD", carried with the id as the byte 0xE9: refused.
    expect(fffd.code).toBe(0);
    const wire = Buffer.from(fffd.out, 'utf8');
    const at = wire.indexOf(Buffer.from('caf\uFFFD', 'utf8'));
    const mangled = Buffer.concat([wire.subarray(0, at + 3), Buffer.from([0xe9]), wire.subarray(at + 6)]);
    const [okVerified, fffdVerified, r] = await Promise.all([
      run(['verify'], ok.out),
      run(['verify'], fffd.out),
      run(['verify'], mangled),
    ]);
    expect(okVerified.json()).toMatchObject({ ok: true, account: 'non_blocking' });
    expect(fffdVerified.code).toBe(0);
    expect([r.code, r.json()]).toEqual([1, { ok: false, error: 'MalformedRecord' }]);
  });

  it('a byte order mark is not JSON text: MalformedRecord', async () => {
    const r = await run(['verify'], Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(fixture)]));
    expect([r.code, r.json()]).toEqual([1, { ok: false, error: 'MalformedRecord' }]);
  });
});

describe.concurrent('a member name twice in one object is MalformedRecord (no reader may pick one)', () => {
  const bad = addr(0);
  const cases: [string, string][] = [
    // JSON.parse keeps the last: each of these verified as the honest record before.
    ['the record head', fixture.replace(/^\{/, `{"head": "${bad}",`)],
    ['an escaped name', fixture.replace(/^\{/, `{"hea\\u0064": "${bad}",`)],
    [
      'a segment field',
      fixture.replace(/"kind": "suspended",/, `"kind": "suspended", "manifest": "${bad}",`),
    ],
    [
      'a bundle address',
      (() => {
        const w = JSON.parse(fixture);
        const [address, body] = Object.entries(w.attestations)[0]!;
        const text = JSON.stringify(w);
        const forged = JSON.stringify({ ...(body as object), meter: 'forged' });
        return text.replace('"attestations":{', `"attestations":{"${address}":${forged},`);
      })(),
    ],
  ];
  for (const [what, text] of cases) {
    it(`verify: ${what}`, async () => {
      expect(() => JSON.parse(text)).not.toThrow();
      const r = await run(['verify'], text);
      expect([r.code, r.json()]).toEqual([1, { ok: false, error: 'MalformedRecord' }]);
      expect(r.err).toMatch(/appears twice/);
    });
  }

  it('build: a duplicate in ops.json', async () => {
    const ops = `{"unit_id": "${addr(5)}", "unit_id": "${UNIT}", "grants_id": "${addr(0x22)}", "ops": []}`;
    const r = await run(['build'], ops);
    expect([r.code, r.json()]).toEqual([1, { error: 'MalformedRecord' }]);
  });

  it('control: the same name in sibling objects, in strings and in arrays is fine', async () => {
    const ops = JSON.stringify({
      unit_id: UNIT,
      grants_id: addr(0x22),
      ops: [
        { op: 'execute', attestation: addr(1), account: { dispatched: ['"op": \\"x', 'op'], resolved: [] } },
        { op: 'execute', attestation: addr(2), account: { dispatched: [], resolved: ['op'] } },
      ],
    });
    const [verified, built] = await Promise.all([run(['verify'], fixture), run(['build'], ops)]);
    expect(verified.code).toBe(0);
    expect(built.code).toBe(0);
  });
});

describe('standard input that cannot be read', () => {
  let fd: number;
  beforeAll(() => {
    fd = openSync(tmpdir(), 'r'); // a directory: read(2) fails with EISDIR
  });
  afterAll(() => closeSync(fd));

  it('is not judged as a record: exit 2, nothing on stdout, the reason on stderr', async () => {
    const commands = ['build', 'verify', 'inspect'];
    const results = await Promise.all(commands.map((command) => run([command], '', fd)));
    for (const [i, r] of results.entries()) {
      expect([commands[i], r.code, r.out]).toEqual([commands[i], 2, '']);
      expect(r.err).toMatch(/cannot read standard input: EISDIR/);
    }
  });
});

describe.concurrent('build blames the code verify blames: a malformed body is read after its segment’s phase', () => {
  const doc = JSON.parse(readFileSync(`${pkg}examples/ops.json`, 'utf8'));
  const [execute, suspend] = doc.ops;
  const malformed = { ...execute.body, exit_code: 1.5 };

  it('build: executed while parked, with a body that cannot be read → PhaseViolation, as verify says', async () => {
    const ops = {
      ...doc,
      ops: [{ op: 'execute', attestation: addr(0xab) }, suspend, { ...execute, body: malformed }],
    };
    // The same content as a wire record whose heads recompute: verify blames the same segment the same way.
    const forged = forge(
      [
        exec(0xab),
        { kind: 'suspended', snapshot: suspend.snapshot, manifest: suspend.manifest },
        { kind: 'executed', attestation: execute.attestation },
      ],
      doc.unit_id,
      doc.grants_id,
    );
    const json = { ...encodeWire(forged), attestations: { [execute.attestation]: malformed } };
    const [r, v] = await Promise.all([
      run(['build'], JSON.stringify(ops)),
      run(['verify'], JSON.stringify(json)),
    ]);
    expect([r.code, r.json()]).toMatchObject([1, { error: 'PhaseViolation', index: 2, length: 2 }]);
    expect(v.json()).toEqual({
      ok: false,
      error: 'PhaseViolation',
      index: 2,
    });
  });

  it('control: where the phase is fine, the body that cannot be read is MalformedRecord; after close, RecordClosed', async () => {
    const closed = {
      ...doc,
      ops: [
        { op: 'close', reason: 'failed' },
        { ...execute, body: malformed },
      ],
    };
    const [r, c] = await Promise.all([
      run(['build'], JSON.stringify({ ...doc, ops: [{ ...execute, body: malformed }] })),
      run(['build'], JSON.stringify(closed)),
    ]);
    expect([r.code, r.json()]).toMatchObject([1, { error: 'MalformedRecord', index: 0, length: 0 }]);
    expect(c.json()).toMatchObject({ error: 'RecordClosed', index: 1 });
  });
});

describe.concurrent('exit_code is a JSON integer: 0.0, 0e0, -0.0 are not (a reader that keeps floats apart refuses them)', () => {
  const ops = readFileSync(`${pkg}examples/ops.json`, 'utf8');
  /** The text with the second `"exit_code": 0` (the body of op / segment 3) written as `literal`. */
  function second(text: string, literal: string): string {
    let seen = 0;
    return text.replace(/"exit_code": 0,/g, (m) => (++seen === 2 ? `"exit_code": ${literal},` : m));
  }

  for (const literal of ['0.0', '0e0', '-0.0', '0E+0']) {
    it(`verify and build refuse ${literal} where it stands: MalformedRecord at segment / op 3`, async () => {
      const [v, b] = await Promise.all([
        run(['verify'], second(fixture, literal)),
        run(['build'], second(ops, literal)),
      ]);
      expect([v.code, v.json()]).toEqual([1, { ok: false, error: 'MalformedRecord', index: 3 }]);
      expect(v.err).toMatch(/exit_code/);
      expect([b.code, b.json()]).toMatchObject([1, { error: 'MalformedRecord', index: 3, length: 3 }]);
    });
  }

  it('control: integer literals (-0 included: the same i32) verify and build as before', async () => {
    const [v, b, meter] = await Promise.all([
      run(['verify'], second(fixture, '-0')),
      run(['build'], second(ops, '-0')),
      // "exit_code" as a string inside a call id or meter is not a member: untouched.
      run(['verify'], fixture.replace('"meter": "', '"meter": "\\"exit_code\\": 1.5 ')),
    ]);
    expect(v.json()).toMatchObject({ ok: true, head });
    expect([b.code, JSON.parse(b.out).head]).toEqual([0, head]);
    expect(meter.json()).toMatchObject({
      ok: false,
      error: 'AttestationMismatch',
    });
  });
});
