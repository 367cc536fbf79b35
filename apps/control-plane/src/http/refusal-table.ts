// The README's refusal tables, rendered from the one vocabulary (src/errors.ts). refusal-table.test.ts
// checks the README holds exactly these rows; on a mismatch it prints the tables to paste.
import { ADMISSION_RULES, REFUSALS } from '../errors.js';

export type Row = readonly string[];

export function refusalRows(): Row[] {
  return Object.entries(REFUSALS).map(([code, r]) => [`\`${code}\``, String(r.status), r.when]);
}

export function ruleRows(): Row[] {
  return Object.entries(ADMISSION_RULES).map(([rule, r]) => [
    `\`${rule}\``,
    `${REFUSALS[r.code].status} \`${r.code}\``,
    r.retryAfter ? 'yes' : 'no',
    r.when,
  ]);
}

/** A markdown table, columns padded to their widest cell. */
export function markdownTable(header: Row, rows: readonly Row[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: Row) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export const REFUSAL_HEADER: Row = ['code', 'status', 'when'];
export const RULE_HEADER: Row = ['rule', 'answer', 'Retry-After', 'when'];

/** The rows of every markdown table in `text` whose header is `header` (cells trimmed). */
export function tableRows(text: string, header: Row): Row[][] {
  const tables: Row[][] = [];
  const lines = text.split('\n');
  const cells = (l: string) =>
    l
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.trim().startsWith('|') || cells(lines[i]!).join('|') !== header.join('|')) continue;
    const rows: Row[] = [];
    for (let j = i + 2; j < lines.length && lines[j]!.trim().startsWith('|'); j++)
      rows.push(cells(lines[j]!));
    tables.push(rows);
  }
  return tables;
}
