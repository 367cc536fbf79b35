// The head log's commands of the built CLI (spec/witnessed-heads.md, "Command-line contract"): the wiring to
// @everdict/headlog, exit codes and output lines. Expected roots are computed here with @noble/hashes; every
// "Precise readings" clause is the conformance suite's LOG class. The tests are independent: they run
// concurrently (cli-process.ts).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bytesToHex, MemoryTree } from '@everdict/headlog';
import { blake3 } from '@noble/hashes/blake3.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, requireBuiltCli, runCli as run } from './cli-process.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const cat = (...parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));
const leaves = [0, 1, 2].map((i) =>
  cat(new TextEncoder().encode('everdict.headlog/1'), new Uint8Array(144).fill(i)),
);
const leafHash = (l: Uint8Array) => blake3(cat(Uint8Array.of(0), l));
const nodeHash = (a: Uint8Array, b: Uint8Array) => blake3(cat(Uint8Array.of(1), a, b));

beforeAll(requireBuiltCli);

describe.concurrent('everdict-runrecord log-*', () => {
  it('log-root prints one line {"tree_size","root"}: H("") for none, RFC 9162 MTH with BLAKE3 otherwise', async () => {
    const [empty, three] = await Promise.all([
      run(['log-root'], '{"leaves":[]}'),
      run(['log-root'], JSON.stringify({ leaves: leaves.map(hex) })),
    ]);
    expect([empty.code, empty.out]).toEqual([
      0,
      `${JSON.stringify({ tree_size: '0', root: hex(blake3(new Uint8Array())) })}\n`,
    ]);
    const root = nodeHash(nodeHash(leafHash(leaves[0]!), leafHash(leaves[1]!)), leafHash(leaves[2]!));
    expect([three.code, JSON.parse(three.out)]).toEqual([0, { tree_size: '3', root: hex(root) }]);
  });

  it('log-verify-inclusion and log-verify-consistency: {"ok":true} (exit 0) or {"ok":false,"error"} (exit 1)', async () => {
    const tree = new MemoryTree();
    for (const l of leaves) tree.appendLeaf(l);
    const incl = {
      leaf: hex(leaves[1]!),
      index: 1,
      tree_size: 3,
      root: bytesToHex(tree.root()),
      path: tree.inclusionProof(1).map(bytesToHex),
    };
    const cons = {
      old_size: 2,
      old_root: bytesToHex(tree.rootAt(2)),
      new_size: 3,
      new_root: bytesToHex(tree.root()),
      proof: tree.consistencyProof(2).map(bytesToHex),
    };
    const [included, wrong, consistent, forked, short] = await Promise.all([
      run(['log-verify-inclusion'], JSON.stringify(incl)),
      run(['log-verify-inclusion'], JSON.stringify({ ...incl, root: bytesToHex(tree.rootAt(2)) })),
      run(['log-verify-consistency'], JSON.stringify(cons)),
      run(['log-verify-consistency'], JSON.stringify({ ...cons, old_root: cons.new_root })),
      run(['log-verify-consistency'], JSON.stringify({ ...cons, proof: [] })),
    ]);
    expect(included).toMatchObject({
      code: 0,
      out: '{"ok":true}\n',
    });
    expect([wrong.code, JSON.parse(wrong.out)]).toEqual([1, { ok: false, error: 'InclusionFailed' }]);
    expect(consistent).toMatchObject({
      code: 0,
      out: '{"ok":true}\n',
    });
    expect([forked.code, JSON.parse(forked.out)]).toEqual([1, { ok: false, error: 'InconsistentLog' }]);
    expect([short.code, JSON.parse(short.out)]).toEqual([1, { ok: false, error: 'MalformedProof' }]);
  });

  it('input that is not JSON is MalformedProof, exit 1 (log-root included)', async () => {
    const commands = ['log-root', 'log-verify-inclusion', 'log-verify-consistency'];
    const results = await Promise.all(commands.map((cmd) => run([cmd], '{not json')));
    for (const [i, r] of results.entries()) {
      const cmd = commands[i];
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

  it('an unknown log subcommand or an extra argument is usage: exit 2, nothing on stdout', async () => {
    const cases = [['log-frobnicate'], ['log-root', '--pretty'], ['log-verify-inclusion', 'x']];
    const results = await Promise.all(cases.map((args) => run(args, '{"leaves":[]}')));
    for (const [i, r] of results.entries()) {
      const args = cases[i];
      expect([args, r.code, r.out]).toEqual([args, 2, '']);
      expect(r.err).toMatch(/usage:/);
    }
  });
});
