#!/usr/bin/env node
// `pnpm test`: build what the tests need, run every package's tests through turbo, then print one
// closing line, `N passed, N failed`, summed from each package's vitest JSON report.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const groups = ['packages', 'apps', '.', 'tooling'];
const dirs = [];
for (const g of groups) {
  if (g === '.') {
    dirs.push(join(root, 'conformance'));
    continue;
  }
  const base = join(root, g);
  if (!existsSync(base)) continue;
  if (g === 'tooling') dirs.push(base);
  else for (const d of readdirSync(base)) dirs.push(join(base, d));
}
const reports = dirs.map((d) => join(d, '.test-results', 'vitest.json'));
for (const r of reports) rmSync(r, { force: true });

const extra = process.argv.slice(2);
const run = spawnSync('pnpm', ['exec', 'turbo', 'run', 'test', '--continue', ...extra], {
  cwd: root,
  stdio: 'inherit',
});

let passed = 0;
let failed = 0;
// Where the time went: each package's wall time (its first file's start to its last file's end).
const walls = [];
let skipped = 0;
const missing = [];
const failures = [];
for (const r of reports) {
  if (!existsSync(r)) continue;
  const j = JSON.parse(readFileSync(r, 'utf8'));
  for (const file of j.testResults ?? []) {
    for (const t of file.assertionResults ?? []) {
      if (t.status !== 'failed') continue;
      const why = String(t.failureMessages?.[0] ?? '')
        .split('\n')
        .slice(0, 6)
        .join('\n    ');
      failures.push(`${file.name.replace(root, '')} > ${t.fullName}\n    ${why}`);
    }
  }
  const files = j.testResults ?? [];
  if (files.length > 0) {
    const start = Math.min(...files.map((f) => f.startTime ?? Infinity));
    const end = Math.max(...files.map((f) => f.endTime ?? 0));
    if (Number.isFinite(start) && end > start)
      walls.push(
        `${r.replace(root, '').replace('/.test-results/vitest.json', '')} ${((end - start) / 1000).toFixed(0)} s`,
      );
  }
  passed += j.numPassedTests ?? 0;
  failed += j.numFailedTests ?? 0;
  skipped += (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  if (!j.success && (j.numFailedTests ?? 0) === 0) missing.push(r);
}
if (missing.length > 0) {
  // A suite that failed to load counts as a failure even though no test inside it ran.
  failed += missing.length;
  console.error(`suites failed outside a test: ${missing.join(', ')}`);
}
if (walls.length > 0) console.log(`\ntest wall time per package: ${walls.join(', ')}`);
// The closing lines are what a truncated CI log still shows: name every failed test and its first lines.
if (failures.length > 0) console.log(`\nfailed tests:\n${failures.map((f) => `  ${f}`).join('\n')}`);
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
// Against a live database (CI's second pass) nothing may be skipped: a skipped test there is a test that
// silently did not run against the server it needs.
const dbSkips = process.env.EVERDICT_TEST_DATABASE_URL && skipped > 0;
if (dbSkips) console.error(`${skipped} tests skipped although EVERDICT_TEST_DATABASE_URL is set`);
const code = run.status ?? 1;
process.exit(code !== 0 ? code : failed > 0 || dbSkips ? 1 : 0);
