import { packageTestConfig } from '@everdict/tooling/vitest';

export default packageTestConfig();
