import { describe, expect, it } from '@jest/globals';
import { configurationProblems as problemsOf, loadConfiguration } from './configuration.js';

describe('security settings', () => {
  it('validates API keys', () => {
    expect(problemsOf({ API_KEYS: 'acme:short' })).toEqual([expect.stringMatching(/^API_KEYS: .*16 characters/)]);
    expect(problemsOf({ API_KEYS: 'no-colon' })).toEqual([expect.stringMatching(/^API_KEYS: /)]);
  });

  it('refuses one secret for two tenants (the first tenant would win)', () => {
    expect(problemsOf({ API_KEYS: 'acme:same-secret-0123456789,globex:same-secret-0123456789' })).toEqual([
      'API_KEYS: tenants "acme" and "globex" have the same secret; every secret must be unique',
    ]);
    expect(loadConfiguration({ API_KEYS: 'acme:one-secret-0123456789,acme:two-secret-0123456789' }).security.apiKeys).toHaveLength(2);
  });

  it('reads scopes from API_KEYS; a key without scopes may only handle orders (security review 2, #9)', () => {
    const keys = loadConfiguration({
      API_KEYS: 'acme:acme-secret-0123456789,acme:acme-privacy-0123456789:privacy+admin,globex:glo:bex-secret-0123456789:orders',
    }).security.apiKeys;
    expect(keys).toEqual([
      { tenant: 'acme', secret: 'acme-secret-0123456789', id: 'acme#1', scopes: ['orders'] },
      { tenant: 'acme', secret: 'acme-privacy-0123456789', id: 'acme#2', scopes: ['privacy', 'admin'] },
      { tenant: 'globex', secret: 'glo:bex-secret-0123456789', id: 'globex#1', scopes: ['orders'] },
    ]);
    expect(problemsOf({ API_KEYS: 'acme:acme-secret-0123456789:root' })).toEqual([expect.stringMatching(/unknown scope/)]);
    expect(loadConfiguration({}).security.apiKeys[0].scopes).toEqual(['orders', 'admin', 'privacy']);
  });

  it('refuses a key limit without a tenant limit (the tenant limit bounds how many keys are tracked)', () => {
    expect(problemsOf({ RATE_LIMIT_PER_KEY_PER_MINUTE: '10', RATE_LIMIT_PER_TENANT_PER_MINUTE: '0' })).toEqual([
      expect.stringMatching(/^RATE_LIMIT_PER_KEY_PER_MINUTE: .*tenant limit/),
    ]);
    expect(problemsOf({ RATE_LIMIT_PER_KEY_PER_MINUTE: '0', RATE_LIMIT_PER_TENANT_PER_MINUTE: '0' })).toEqual([]);
  });
});
