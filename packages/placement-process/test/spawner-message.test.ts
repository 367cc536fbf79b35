// The spawner's messages are checked by hand as they arrive (five a command, on the driver's thread): the
// check accepts exactly what the zod schema it replaced accepted, and hands back the same message.
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { spawnerMessage } from '../src/spawner/client.js';

const Schema = z.discriminatedUnion('t', [
  z.object({ t: z.literal('pid'), id: z.int(), pid: z.int().positive() }),
  z.object({ t: z.literal('init'), id: z.int(), pid: z.int().positive() }),
  z.object({
    t: z.literal('fd'),
    id: z.int(),
    i: z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(5)]),
  }),
  z.object({ t: z.literal('failed'), id: z.int(), message: z.string() }),
  z.object({ t: z.literal('warning'), id: z.int(), message: z.string() }),
  z.object({
    t: z.literal('exit'),
    id: z.int(),
    code: z.int().nullable(),
    signal: z.string().nullable(),
    status: z.int().nullable(),
  }),
]);

const value = fc.oneof(
  fc.integer({ min: -3, max: 7 }),
  fc.integer(),
  fc.constantFrom(2 ** 53, -(2 ** 53), 1.5, Number.NaN, Number.POSITIVE_INFINITY, -0),
  fc.constantFrom('pid', 'init', 'fd', 'failed', 'warning', 'exit', 'spawn', '', 'SIGKILL'),
  fc.string(),
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.constant([]),
  fc.constant({}),
);
const message = fc.oneof(
  fc.record(
    {
      t: fc.constantFrom('pid', 'init', 'fd', 'failed', 'warning', 'exit', 'spawn'),
      id: value,
      pid: value,
      i: value,
      message: value,
      code: value,
      signal: value,
      status: value,
      extra: value,
    },
    { requiredKeys: [] },
  ),
  value,
);

it('accepts exactly what the schema accepts, as it is', () => {
  fc.assert(
    fc.property(message, (raw) => {
      const parsed = Schema.safeParse(raw);
      const checked = spawnerMessage(raw);
      expect(checked !== null).toBe(parsed.success);
      if (parsed.success) expect(checked).toMatchObject(parsed.data);
    }),
    { numRuns: 5000 },
  );
  for (const ok of [
    { t: 'pid', id: 1, pid: 42 },
    { t: 'fd', id: 3, i: 5 },
    { t: 'exit', id: 3, code: null, signal: 'SIGKILL', status: null },
    { t: 'exit', id: 3, code: 1, signal: null, status: 1 },
    { t: 'failed', id: 3, message: 'no' },
  ])
    expect(spawnerMessage(ok)).toBe(ok);
  for (const bad of [
    { t: 'pid', id: 1, pid: 0 },
    { t: 'fd', id: 1, i: 3 },
    { t: 'exit', id: 1.5, code: 0, signal: null, status: null },
    { t: 'exit', id: 1, code: 0, signal: null },
  ])
    expect(spawnerMessage(bad)).toBeNull();
});
