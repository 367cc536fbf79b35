import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';

const example = fileURLToPath(new URL('../examples/quickstart.mjs', import.meta.url));
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));

describe('README example', () => {
  it('runs and prints what the README says', () => {
    expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
    const out = spawnSync(process.execPath, [example], { encoding: 'utf8' });
    expect(out.stderr).toBe('');
    // The digest, by hand: the three events' canonical JSONL (keys sorted, no spaces, one per line).
    const ts = '2026-12-01T10:00:00.000Z';
    const jsonl =
      `{"content":"fix the failing test","role":"user","runId":"run-1","seq":1,"ts":"${ts}","type":"message"}\n` +
      `{"inputTokens":1200,"model":"gpt-4o","outputTokens":85,"runId":"run-1","seq":2,"ts":"${ts}","type":"llm_call"}\n` +
      `{"callId":"c1","input":{"path":"src"},"runId":"run-1","seq":3,"tool":"run_tests","ts":"${ts}","type":"tool_call"}\n`;
    const digest = `blake3:${bytesToHex(blake3(new TextEncoder().encode(jsonl)))}`;
    expect(out.stdout.trim().split('\n')).toEqual([
      '2 1 2',
      'llm_call,tool_call 3',
      `3 ${digest}`,
      'trajectory_sealed 409',
    ]);
  });
});

describe('README', () => {
  it('shows the example file verbatim', () => {
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    expect(readme).toContain(`\`\`\`js\n${readFileSync(example, 'utf8')}\`\`\``);
  });
});
