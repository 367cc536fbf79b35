// The README's refusal tables are the vocabulary the app emits: every code with its status, every rule of
// the admission gate with its answer and whether a Retry-After comes with it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  markdownTable,
  REFUSAL_HEADER,
  RULE_HEADER,
  refusalRows,
  ruleRows,
  tableRows,
} from './refusal-table.js';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe('the README refusal tables', () => {
  it('list exactly the codes the app answers with, each with its one status', () => {
    const tables = tableRows(readme, REFUSAL_HEADER);
    expect(tables, `paste into README.md:\n${markdownTable(REFUSAL_HEADER, refusalRows())}`).toHaveLength(1);
    expect(tables[0], `paste into README.md:\n${markdownTable(REFUSAL_HEADER, refusalRows())}`).toEqual(
      refusalRows(),
    );
  });

  it("list exactly the admission gate's rules as a refusal names them", () => {
    const tables = tableRows(readme, RULE_HEADER);
    expect(tables, `paste into README.md:\n${markdownTable(RULE_HEADER, ruleRows())}`).toHaveLength(1);
    expect(tables[0], `paste into README.md:\n${markdownTable(RULE_HEADER, ruleRows())}`).toEqual(ruleRows());
  });
});
