import { describe, expect, it } from '@jest/globals';
import { missingScope } from './rows.js';

// Issue 34: a token without the scope of the key's record (this service: admin) made a passing
// service FAIL provider-outage; a 403 there is the token's, so the row is SKIP naming the scope.
describe('a 403 on the key record', () => {
  const forbidden = (body: string) => ({ status: 403, headers: { 'content-type': 'application/problem+json' }, body: Buffer.from(body) });

  it('names the scope the problem detail names', () => {
    const reason = missingScope(
      forbidden(JSON.stringify({ status: 403, code: 'insufficient_scope', detail: 'This API key lacks the "admin" scope.' })),
    );
    expect(reason).toBe(
      `the key's record answered 403: the token lacks the "admin" scope (give --token a key with it, or --key-status-path '' not to read the record)`,
    );
  });

  it('says admin (this service) when the body names none', () => {
    expect(missingScope(forbidden('forbidden'))).toContain('lacks the "admin" scope');
    expect(missingScope(forbidden(JSON.stringify({ detail: 'needs the "keys.read" scope' })))).toContain('lacks the "keys.read" scope');
  });
});
