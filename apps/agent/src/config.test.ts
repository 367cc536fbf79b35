import { describe, expect, it } from 'vitest';
import { agentEnv } from './config.js';
import { isAgentError } from './errors.js';
import { DEFAULT_AGENT_WATTS, DEFAULT_STORAGE_W_PER_GB } from './record/energy.js';

describe('the agent environment', () => {
  it('defaults the documented wattages', () => {
    const env = agentEnv({});
    expect(env.EVERDICT_STORAGE_W_PER_GB).toBe(DEFAULT_STORAGE_W_PER_GB);
    expect(env.EVERDICT_AGENT_WATTS).toBe(DEFAULT_AGENT_WATTS);
  });

  it('a zero or unreadable storage draw is a typed 400 (a park must never be priced at zero)', () => {
    for (const bad of ['0', '-1', 'abc']) {
      const err = (() => {
        try {
          agentEnv({ EVERDICT_STORAGE_W_PER_GB: bad });
        } catch (e) {
          return e;
        }
      })();
      expect(isAgentError(err) && [err.code, err.httpStatus]).toEqual(['bad_request', 400]);
    }
  });
});
