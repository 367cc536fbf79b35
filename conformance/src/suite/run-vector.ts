// Runs one vector against an implementation, through the command-line contract only.
import type { Implementation, Invocation, Subcommand } from '../contract/implementation.js';
import { BuildRefusal, VerifyOutput, WireRecord } from '../contract/schemas.js';
import { concat, fromHex, H, toHex } from '../reference/bytes.js';
import { applyPatch } from '../vectors/json-patch.js';
import type { VectorT, VerifyExpectT } from '../vectors/schema.js';
import { CaseFailure, describeVerify, firstDifference, sameField, short } from './compare.js';
import { runLogVector } from './run-log-vector.js';

export interface CaseResult {
  readonly vector: VectorT;
  readonly passed: boolean;
  readonly detail?: string;
}

type BuildVectorT = Extract<VectorT, { kind: 'build' }>;

/** "sandbox.attestation.sig/1", the first 25 bytes of every signed message. */
const SIGNED_PREFIX = new TextEncoder().encode('sandbox.attestation.sig/1');

async function call(
  impl: Implementation,
  sub: Subcommand,
  stdin: string,
  args: string[] = [],
): Promise<Invocation> {
  const inv = await impl.invoke(sub, stdin, args);
  if (inv.timedOut) throw new CaseFailure(`${sub} timed out`);
  return inv;
}

function json(sub: Subcommand, inv: Invocation): unknown {
  try {
    return JSON.parse(inv.stdout);
  } catch {
    const lines = (inv.stdout.trim() || inv.stderr.trim()).split('\n');
    const said = (lines.find((l) => /error/i.test(l)) ?? lines[0] ?? '').trim().slice(0, 120);
    throw new CaseFailure(`${sub} printed no JSON (exit ${inv.exitCode}): ${said}`);
  }
}

function exit(sub: Subcommand, inv: Invocation, code: number, stdout: unknown): void {
  if (inv.exitCode !== code)
    throw new CaseFailure(`expected ${sub} to exit ${code} got ${inv.exitCode} (printed ${short(stdout)})`);
}

function checkVerify(inv: Invocation, expect: VerifyExpectT): void {
  const raw = json('verify', inv);
  const parsed = VerifyOutput.safeParse(raw);
  if (!parsed.success) throw new CaseFailure(`verify printed ${short(raw)}, not the contract's shape`);
  const got = parsed.data;
  if (got.ok !== expect.ok)
    throw new CaseFailure(`expected ${describeVerify(expect)} got ${describeVerify(got)}`);
  exit('verify', inv, expect.ok ? 0 : 1, raw);
  if (expect.ok && got.ok) {
    for (const k of ['head', 'length', 'idle_uj', 'account', 'phase'] as const)
      if (expect[k] !== undefined) sameField(k, expect[k], got[k]);
    for (const k of ['cost', 'signed_by'] as const) {
      if (expect[k] === undefined) continue;
      const diff = firstDifference(expect[k], got[k], `/${k}`);
      if (diff !== undefined) throw new CaseFailure(`verify summary differs at ${diff}`);
    }
  } else if (!expect.ok && !got.ok) {
    const index = got.index ?? null;
    if (got.error !== expect.error || index !== expect.index)
      throw new CaseFailure(`expected ${describeVerify(expect)} got ${describeVerify(got)}`);
    if (expect.index === null && raw !== null && typeof raw === 'object' && 'index' in raw)
      throw new CaseFailure(`expected no index got index ${short(got.index ?? null)}`);
  }
}

async function runBuild(impl: Implementation, v: BuildVectorT): Promise<void> {
  const inv = await call(impl, 'build', JSON.stringify(v.ops));
  const raw = json('build', inv);
  if (v.expect.status === 'refused') {
    const e = v.expect;
    const refusal = BuildRefusal.safeParse(raw);
    if (!refusal.success) throw new CaseFailure(`expected refusal ${e.error}@${e.index} got ${short(raw)}`);
    exit('build', inv, 1, raw);
    const r = refusal.data;
    if (r.error !== e.error || r.index !== e.index)
      throw new CaseFailure(`expected refusal ${e.error}@${e.index} got ${r.error}@${r.index}`);
    sameField('refusal length', e.length, r.length);
    sameField('refusal head', e.head, r.head);
    return;
  }
  exit('build', inv, 0, raw);
  const wire = WireRecord.safeParse(raw);
  if (!wire.success) {
    const issue = wire.error.issues[0];
    throw new CaseFailure(`build printed no valid wire form: /${issue?.path.join('/')} ${issue?.message}`);
  }
  const w = wire.data;
  sameField('length', v.expect.length, w.segments.length);
  for (const [i, head] of v.expect.heads.entries())
    sameField(`head of segment ${i}`, head, w.segments[i]?.head);
  sameField('head', v.expect.head, w.head);
  const diff = firstDifference(v.expect.wire, w);
  if (diff !== undefined) throw new CaseFailure(`wire form differs at ${diff}`);
  for (const p of v.pinned_attestations ?? []) {
    if (toHex(H(fromHex(p.att_hex))) !== p.address)
      throw new CaseFailure(`vector corrupt: pinned att layout does not hash to ${p.address}`);
    if (toHex(fromHex(p.signed_hex)) !== toHex(SIGNED_PREFIX) + p.address)
      throw new CaseFailure(
        'vector corrupt: pinned signed message is not "sandbox.attestation.sig/1" ‖ address',
      );
  }
  for (const p of v.pinned ?? []) {
    if (toHex(H(concat(fromHex(p.prev_head), fromHex(p.segment_hex)))) !== p.head)
      throw new CaseFailure(`vector corrupt: pinned layout of segment ${p.index} does not hash to its head`);
    const prev = p.index === 0 ? undefined : w.segments[p.index - 1]?.head;
    if (prev !== undefined) sameField(`head before pinned segment ${p.index}`, p.prev_head, prev);
    sameField(`head of pinned segment ${p.index} (H(prev ‖ ${p.layout}))`, p.head, w.segments[p.index]?.head);
  }
  if (v.verify !== undefined)
    checkVerify(await call(impl, 'verify', inv.stdout, trustArgs(v.verify.trust_keys)), v.verify.expect);
}

/** `--trust-key K` for each key, in order. */
function trustArgs(keys: readonly string[] | undefined): string[] {
  return (keys ?? []).flatMap((k) => ['--trust-key', k]);
}

async function runVector(impl: Implementation, v: VectorT): Promise<void> {
  if (v.kind === 'log') return runLogVector(impl, v);
  if (v.kind === 'build') return runBuild(impl, v);
  const args = [
    ...(v.expect_head === undefined ? [] : ['--expect-head', v.expect_head]),
    ...trustArgs(v.trust_keys),
  ];
  if (v.kind === 'verify')
    return checkVerify(await call(impl, 'verify', JSON.stringify(v.wire), args), v.expect);
  const built = await call(impl, 'build', JSON.stringify(v.ops));
  const raw = json('build', built);
  exit('build', built, 0, raw);
  const head = typeof raw === 'object' && raw !== null && 'head' in raw ? raw.head : undefined;
  if (head !== v.base_head)
    throw new CaseFailure(`precondition: expected build head ${short(v.base_head)} got ${short(head)}`);
  checkVerify(await call(impl, 'verify', JSON.stringify(applyPatch(raw, v.patch)), args), v.expect);
}

export async function runCase(impl: Implementation, vector: VectorT): Promise<CaseResult> {
  try {
    await runVector(impl, vector);
    return { vector, passed: true };
  } catch (e) {
    const detail = e instanceof CaseFailure ? e.message : `suite error: ${String(e)}`;
    return { vector, passed: false, detail };
  }
}
