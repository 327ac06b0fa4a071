// The README's security claims that a test showed wrong (security review 3,
// SEC4-06): a Redis writer can put back an answer sealed before an erasure
// (delete the mark, SET the captured value), so the README must not say that
// no such answer can be put back, and must say where the guarantee ends.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8').replace(/\s+/g, ' ');

describe('README security claims', () => {
  it('does not claim a Redis writer cannot restore a pre-erasure answer, and names the trust boundary (SEC4-06)', () => {
    expect(README).not.toMatch(/so no answer sealed before the erasure can be put back/);
    expect(README).toMatch(/A writer to Redis can \(delete the mark, SET a captured pre-erasure value\)/);
  });

  it('does not call an unanswered advisory scan a pass (SEC4-08)', () => {
    expect(README).not.toMatch(/no audit answer is reported and skipped/);
    expect(README).toMatch(/NOT JUDGED/);
  });
});
