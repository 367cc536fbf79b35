import { describe, expect, it } from 'vitest';
import { grantSet, unitDefinition } from './record-identity.js';

describe('a run record’s identity values', () => {
  it('are canonical: key order never matters, the tags and fields are fixed', () => {
    const a = unitDefinition({
      tenant: 't',
      kind: 'analysis',
      subject: { config: { b: 1, a: [{ y: 2, x: 1 }] } },
    });
    const b = unitDefinition({
      kind: 'analysis',
      subject: { config: { a: [{ x: 1, y: 2 }], b: 1 } },
      tenant: 't',
    });
    expect(a).toBe(b);
    expect(a).toBe(
      '{"kind":"analysis","subject":{"config":{"a":[{"x":1,"y":2}],"b":1}},"tenant":"t","unit":"everdict.run/1"}',
    );
    expect(grantSet({ placement: { rung: 'inline' }, attach: [] })).toBe(
      '{"attach":[],"envelope":null,"grants":"everdict.grants/1","placement":{"rung":"inline"}}',
    );
  });
});
