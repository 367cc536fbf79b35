import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeBackendContract } from '../contract.js';
import { localBackend } from './local-backend.js';

describeBackendContract('a local directory', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'trajectory-store-'));
  return {
    open: async () => localBackend({ root }),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
});
