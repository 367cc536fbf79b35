// The inline driver against the contract suite: registered functions stand in for the suite's commands
// (a Map per sandbox is its workspace).
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { type ContractCommands, describeDriverContract, refusal } from '../contract.js';
import { utf8 } from '../output.js';
import { InlineDriver, type InlineFunction } from './inline-driver.js';

const text = (b: Uint8Array) => utf8(b);
const files = (state: Map<string, unknown>) => {
  let m = state.get('files') as Map<string, string> | undefined;
  if (!m) {
    m = new Map();
    state.set('files', m);
  }
  return m;
};

const functions: Record<string, InlineFunction> = {
  echo: ({ args }) => ({ stdout: args[0] }),
  echoErr: ({ args }) => ({ stderr: args[0] }),
  exit: ({ args }) => ({ exitCode: Number(args[0]) }),
  cat: ({ stdin }) => ({ stdout: stdin }),
  printEnv: ({ args, env }) => ({ stdout: env[args[0]!] ?? '' }),
  sleep: async ({ args, signal }) => {
    await sleep(Number(args[0]), undefined, { signal }).catch(() => undefined);
    return {};
  },
  flood: ({ args }) => ({ stdout: 'x'.repeat(Number(args[0])) }),
  writeFile: ({ args, sandbox }) => {
    files(sandbox.state).set(args[0]!, args[1]!);
    return {};
  },
  readFile: ({ args, sandbox }) => {
    const c = files(sandbox.state).get(args[0]!);
    return c === undefined ? { exitCode: 1, stderr: `${args[0]}: no such file` } : { stdout: c };
  },
  boom: () => {
    throw new Error('exploded');
  },
};

const commands: ContractCommands = {
  echo: (t) => ['echo', t],
  echoErr: (t) => ['echoErr', t],
  exit: (c) => ['exit', String(c)],
  cat: () => ['cat'],
  printEnv: (n) => ['printEnv', n],
  sleep: (ms) => ['sleep', String(ms)],
  flood: (n) => ['flood', String(n)],
  writeFile: (p, c) => ['writeFile', p, c],
  readFile: (p) => ['readFile', p],
};

describeDriverContract('inline', {
  make: ({ slots }) => new InlineDriver(slots === undefined ? { functions } : { functions, slots }),
  commands,
  missingImage: 'alpine:3.20',
});

describe('inline driver specifics', () => {
  const labels = { tenant: 't', runId: 'r', kind: 'command' };

  it('turns a throwing function into exit code 1 with the error on stderr', async () => {
    const d = new InlineDriver({ functions });
    const h = await d.provision({ labels });
    const r = await d.exec(h, ['boom']);
    expect(r.exitCode).toBe(1);
    expect(text(r.stderr)).toContain('exploded');
  });

  it('aborts a running function when its sandbox is disposed (gone)', async () => {
    const d = new InlineDriver({ functions });
    const h = await d.provision({ labels });
    const running = d.exec(h, ['sleep', '60000']);
    await d.dispose(h);
    await refusal(running, 'gone');
  });

  it('refuses a workspace snapshot at provision (it has no filesystem)', async () => {
    const d = new InlineDriver({ functions });
    await refusal(
      d.provision({ labels, workspace: { address: '0'.repeat(64), bytes: new Uint8Array() } }),
      'unsupported',
    );
    expect((await d.capacity()).slotsFree).toBe(64);
  });
});
