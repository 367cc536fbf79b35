import { ACCOUNT_CASES } from './account.js';
import { ATTEST_BUILD_CASES } from './attest.js';
import { ATTEST_FORGED_CASES } from './attest-forged.js';
import { ATTEST_TAMPER_CASES } from './attest-tamper.js';
import { C6_CASES } from './c6.js';
import { C6_TAMPER_CASES } from './c6-tamper.js';
import { C14_CASES } from './c14.js';
import type { Case } from './define.js';
import { ENERGY_CASES } from './energy.js';
import { LOG_CASES } from './log.js';
import type { LogCase } from './log-define.js';

export const ALL_CASES: readonly (Case | LogCase)[] = [
  ...C6_CASES,
  ...C6_TAMPER_CASES,
  ...C14_CASES,
  ...ACCOUNT_CASES,
  ...ENERGY_CASES,
  ...ATTEST_BUILD_CASES,
  ...ATTEST_TAMPER_CASES,
  ...ATTEST_FORGED_CASES,
  ...LOG_CASES,
];
