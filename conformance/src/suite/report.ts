// The suite's output: one line per case, a summary per class, then exactly `N passed, N failed`.
import { CLASSES } from '../vectors/schema.js';
import type { CaseResult } from './run-vector.js';

export function caseLine(r: CaseResult): string {
  const head = `${r.passed ? 'PASS' : 'FAIL'}  ${r.vector.class.padEnd(7)}  ${r.vector.name}`;
  return r.passed ? head : `${head} — ${r.detail ?? 'failed'}`;
}

export function summaryLines(results: readonly CaseResult[]): string[] {
  const lines: string[] = [''];
  for (const cls of CLASSES) {
    const of = results.filter((r) => r.vector.class === cls);
    if (of.length === 0) continue;
    const passed = of.filter((r) => r.passed).length;
    lines.push(`class ${cls.padEnd(7)}  ${String(passed).padStart(3)}/${of.length} passed`);
  }
  const passed = results.filter((r) => r.passed).length;
  lines.push('', `${passed} passed, ${results.length - passed} failed`);
  return lines;
}
