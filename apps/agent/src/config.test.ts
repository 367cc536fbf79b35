import { describe, expect, it } from 'vitest';
import { agentEnv } from './config.js';
import { isAgentError } from './errors.js';

describe('the agent environment', () => {
  it('reads the control plane and the model endpoint', () => {
    const env = agentEnv({ EVERDICT_URL: 'http://127.0.0.1:8787', EVERDICT_INTERNAL_TOKEN: 't' });
    expect(env).toMatchObject({ EVERDICT_URL: 'http://127.0.0.1:8787', EVERDICT_INTERNAL_TOKEN: 't' });
  });

  it('a URL that is not one is a typed 400', () => {
    const err = (() => {
      try {
        agentEnv({ EVERDICT_URL: 'not a url' });
      } catch (e) {
        return e;
      }
    })();
    expect(isAgentError(err) && [err.code, err.httpStatus]).toEqual(['bad_request', 400]);
  });
});
