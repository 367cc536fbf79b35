// A readable table of a record: index, kind, head prefix, snapshot form, idle energy, bundled attestation
// (energy, outcome, signer), account; the verification, cost and signers above it.
import { snapshotForm } from './snapshot.js';
import type { Account, RunRecord, Segment } from './types.js';
import type { VerifyResult } from './verify.js';

const HEAD_PREFIX = 12;

/** 1234567n → "1,234,567". */
export function groupDigits(n: bigint): string {
  return n.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Microjoules as joules with six decimals: 1250000n → "1.250000 J". */
export function joules(uj: bigint): string {
  return `${groupDigits(uj / 1_000_000n)}.${(uj % 1_000_000n).toString().padStart(6, '0')} J`;
}

function calls(ids: readonly string[]): string {
  return ids.length === 0 ? '—' : ids.join(',');
}

function accountCell(a: Account | undefined): string {
  if (a === undefined) return 'not accounted';
  return `dispatched ${calls(a.dispatched)} · resolved ${calls(a.resolved)}`;
}

function attestedCell(s: Segment, bundle: RunRecord['attestations']): string {
  if (s.kind !== 'executed') return '—';
  const body = bundle?.get(s.attestation);
  if (body === undefined) return 'not bundled';
  const energy = `${groupDigits(body.activeUj)} µJ ${body.outcome}`;
  return body.signature === undefined
    ? `${energy}, unsigned`
    : `${energy}, signed ${body.signature.key.slice(0, HEAD_PREFIX)}`;
}

function row(s: Segment, i: number, bundle: RunRecord['attestations']): string[] {
  const snap = s.kind === 'suspended' || s.kind === 'resumed' ? snapshotForm(s.snapshot) : '—';
  const idle = s.kind === 'resumed' ? `${groupDigits(s.idleUj)} µJ ${s.idleProvenance}` : '—';
  const account =
    s.kind === 'executed' ? accountCell(s.account) : s.kind === 'closed' ? `(${s.reason})` : '—';
  return [String(i), s.kind, s.head.slice(0, HEAD_PREFIX), snap, idle, attestedCell(s, bundle), account];
}

function table(rows: string[][], rightAligned: ReadonlySet<number>): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => [...r[c]!].length)));
  return rows.map((r) =>
    r
      .map((cell, c) => {
        const pad = ' '.repeat(widths[c]! - [...cell].length);
        return rightAligned.has(c) ? pad + cell : cell + pad;
      })
      .join('  ')
      .trimEnd(),
  );
}

/** The record as text, with its verification result in the header. */
export function inspectRecord(record: RunRecord, result: VerifyResult): string {
  const lines: string[] = [];
  const status = result.ok
    ? 'verifies from genesis'
    : `FAILS verification: ${result.error}${result.index === undefined ? '' : ` at segment ${result.index}`} (${result.message})`;
  lines.push(`run record  sandbox.runrecord/1 — ${status}`);
  lines.push(`  unit    ${record.unitId}`);
  lines.push(`  grants  ${record.grantsId}`);
  lines.push(`  head    ${record.head}`);
  if (result.ok) {
    const a = result.account;
    const blame =
      'index' in a && a.index !== undefined
        ? ` (segment ${a.index}${'callId' in a ? `, call ${a.callId}` : ''})`
        : '';
    lines.push(`  length  ${result.length}   phase ${result.phase}`);
    lines.push(
      `  idle    ${joules(result.idleUj)} (${groupDigits(result.idleUj)} µJ)   account ${a.verdict}${blame}`,
    );
    const c = result.cost;
    lines.push(
      `  cost    ${joules(c.totalUj)} = active ${joules(c.activeUj)} + idle ${joules(c.idleUj)}` +
        (c.unresolved === 0 ? '' : `   ${c.unresolved} executed segment(s) not bundled: not costed`),
    );
    lines.push(`  signed  ${result.signedBy.length === 0 ? '—' : result.signedBy.join(', ')}`);
  } else {
    lines.push(`  length  ${record.segments.length}`);
  }
  lines.push('');
  const header = ['#', 'kind', 'head', 'snapshot', 'idle energy', 'attestation', 'account'];
  const body = record.segments.map((s, i) => row(s, i, record.attestations));
  const bad = result.ok ? undefined : result.index;
  const rendered = table([header, ...body], new Set([0]));
  lines.push(`  ${rendered[0]}`);
  rendered.slice(1).forEach((r, i) => {
    lines.push(`${i === bad ? '✗' : ' '} ${r}`);
  });
  if (record.segments.length === 0) lines.push('  (no segments: the record is at genesis)');
  return `${lines.join('\n')}\n`;
}
