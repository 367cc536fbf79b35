// Memory stays flat in trajectory size: a trajectory larger than the heap cap of the process that
// appends and seals it (the canonical JSONL alone would not fit), with the heap sampled while it seals.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { canonicalLine } from './canonical.js';
import { sampleEvents } from './fixtures.js';

const child = fileURLToPath(new URL('../test/seal-memory-child.mjs', import.meta.url));
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const EVENTS = 150_000;
const HEAP_CAP_MB = 32;

describe('sealing a large trajectory', () => {
  it(`appends and seals ${EVENTS} events in a process capped at ${HEAP_CAP_MB} MB of heap`, async () => {
    expect(existsSync(dist), `${dist} is missing: build first (turbo's test task does)`).toBe(true);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'seal-memory-'));
    try {
      const out = spawnSync(
        process.execPath,
        [`--max-old-space-size=${HEAP_CAP_MB}`, child, dir, String(EVENTS)],
        {
          encoding: 'utf8',
        },
      );
      expect(out.stderr).toBe('');
      expect(out.status).toBe(0);
      const result = JSON.parse(out.stdout);
      const hasher = blake3.create();
      for (let seq = 0; seq < EVENTS; seq += 1000)
        for (const e of sampleEvents('big', seq, 1000))
          hasher.update(new TextEncoder().encode(canonicalLine(e)));
      expect(result).toMatchObject({
        eventCount: EVENTS,
        ok: true,
        digest: `blake3:${bytesToHex(hasher.digest())}`,
      });
      const trajectoryMb = result.bytes / 2 ** 20;
      expect(trajectoryMb).toBeGreaterThan(HEAP_CAP_MB * 0.65); // with the ~15 MB of loaded modules, it cannot fit
      expect(result.peakSealMb).toBeLessThan(HEAP_CAP_MB);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
