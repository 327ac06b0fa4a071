// The docs' security claims that a test showed wrong (security review 3,
// SEC4-06): a Redis writer can put back an answer sealed before an erasure
// (delete the mark, SET the captured value), so the docs must not say that
// no such answer can be put back, and must say where the guarantee ends.
// The claims moved with their sections out of the README: the Redis fast path
// into the package's contract, the audit into docs/security.md.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8').replace(/\s+/g, ' ');
const CONTRACT = read('packages/nest-idempotency/docs/contract.md');
const SECURITY = read('docs/security.md');

describe('the docs security claims (contract.md, docs/security.md)', () => {
  it('does not claim a Redis writer cannot restore a pre-erasure answer, and names the trust boundary (SEC4-06)', () => {
    expect(CONTRACT).not.toMatch(/so no answer sealed before the erasure can be put back/);
    expect(CONTRACT).toMatch(/A writer to Redis can \(delete the mark, SET a captured pre-erasure value\)/);
  });

  it('does not call an unanswered advisory scan a pass (SEC4-08)', () => {
    expect(SECURITY).not.toMatch(/no audit answer is reported and skipped/);
    expect(SECURITY).toMatch(/NOT JUDGED/);
  });
});
