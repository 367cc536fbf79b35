// The head log's commands of the built CLI (spec/witnessed-heads.md, "Command-line contract"): the wiring to
// @everdict/headlog, exit codes and output lines. Expected roots are computed here with @noble/hashes; every
// "Precise readings" clause is the conformance suite's LOG class.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bytesToHex, MemoryTree } from '@everdict/headlog';
import { blake3 } from '@noble/hashes/blake3.js';
import { beforeAll, describe, expect, it } from 'vitest';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const run = (args: string[], input: string) => {
  const r = spawnSync(process.execPath, [cli, ...args], { input, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const cat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));
const leaves = [0, 1, 2].map((i) =>
  cat(new TextEncoder().encode('everdict.headlog/1'), new Uint8Array(144).fill(i)),
);
const leafHash = (l: Uint8Array) => blake3(cat(Uint8Array.of(0), l));
const nodeHash = (a: Uint8Array, b: Uint8Array) => blake3(cat(Uint8Array.of(1), a, b));

beforeAll(() => {
  if (!existsSync(cli))
    throw new Error(`${cli} is missing: run \`pnpm --filter @everdict/runrecord build\` first`);
});

describe('everdict-runrecord log-*', () => {
  it('log-root prints one line {"tree_size","root"}: H("") for none, RFC 9162 MTH with BLAKE3 otherwise', () => {
    const empty = run(['log-root'], '{"leaves":[]}');
    expect([empty.code, empty.out]).toEqual([
      0,
      `${JSON.stringify({ tree_size: '0', root: hex(blake3(new Uint8Array())) })}\n`,
    ]);
    const three = run(['log-root'], JSON.stringify({ leaves: leaves.map(hex) }));
    const root = nodeHash(nodeHash(leafHash(leaves[0]!), leafHash(leaves[1]!)), leafHash(leaves[2]!));
    expect([three.code, JSON.parse(three.out)]).toEqual([0, { tree_size: '3', root: hex(root) }]);
  });

  it('log-verify-inclusion and log-verify-consistency: {"ok":true} (exit 0) or {"ok":false,"error"} (exit 1)', () => {
    const tree = new MemoryTree();
    for (const l of leaves) tree.appendLeaf(l);
    const incl = {
      leaf: hex(leaves[1]!),
      index: 1,
      tree_size: 3,
      root: bytesToHex(tree.root()),
      path: tree.inclusionProof(1).map(bytesToHex),
    };
    expect(run(['log-verify-inclusion'], JSON.stringify(incl))).toMatchObject({
      code: 0,
      out: '{"ok":true}\n',
    });
    const wrong = run(
      ['log-verify-inclusion'],
      JSON.stringify({ ...incl, root: bytesToHex(tree.rootAt(2)) }),
    );
    expect([wrong.code, JSON.parse(wrong.out)]).toEqual([1, { ok: false, error: 'InclusionFailed' }]);
    const cons = {
      old_size: 2,
      old_root: bytesToHex(tree.rootAt(2)),
      new_size: 3,
      new_root: bytesToHex(tree.root()),
      proof: tree.consistencyProof(2).map(bytesToHex),
    };
    expect(run(['log-verify-consistency'], JSON.stringify(cons))).toMatchObject({
      code: 0,
      out: '{"ok":true}\n',
    });
    const forked = run(['log-verify-consistency'], JSON.stringify({ ...cons, old_root: cons.new_root }));
    expect([forked.code, JSON.parse(forked.out)]).toEqual([1, { ok: false, error: 'InconsistentLog' }]);
    const short = run(['log-verify-consistency'], JSON.stringify({ ...cons, proof: [] }));
    expect([short.code, JSON.parse(short.out)]).toEqual([1, { ok: false, error: 'MalformedProof' }]);
  });

  it('input that is not JSON is MalformedProof, exit 1 (log-root included)', () => {
    for (const cmd of ['log-root', 'log-verify-inclusion', 'log-verify-consistency']) {
      const r = run([cmd], '{not json');
      expect([cmd, r.code, JSON.parse(r.out)]).toEqual([cmd, 1, { ok: false, error: 'MalformedProof' }]);
    }
  });

  it('the bin loads nothing but its own files and Node built-ins: zod and @everdict/headlog are bundled (one zod)', () => {
    // every module the bin can load, following its static and dynamic imports through dist/
    const outside = new Set<string>();
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(file, 'utf8');
      for (const m of code.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+)["']/g)) {
        const spec = m[1]!;
        if (spec.startsWith('./')) visit(join(dirname(file), spec));
        else if (!spec.startsWith('node:') && !['fs', 'path', 'url', 'crypto', 'os'].includes(spec))
          outside.add(spec);
      }
    };
    visit(cli);
    expect(seen.size).toBeGreaterThan(5);
    expect([...outside]).toEqual([]);
  });

  it('an unknown log subcommand or an extra argument is usage: exit 2, nothing on stdout', () => {
    for (const args of [['log-frobnicate'], ['log-root', '--pretty'], ['log-verify-inclusion', 'x']]) {
      const r = run(args, '{"leaves":[]}');
      expect([args, r.code, r.out]).toEqual([args, 2, '']);
      expect(r.err).toMatch(/usage:/);
    }
  });
});
