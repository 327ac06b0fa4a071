import { describe, expect, it } from '@jest/globals';
import { ApiKeyRegistry, bearerSecret } from './api-key.registry.js';

describe('ApiKeyRegistry', () => {
  const registry = new ApiKeyRegistry([
    { tenant: 'acme', secret: 'acme-secret-0123456789', id: 'acme#1', scopes: ['orders'] },
    { tenant: 'globex', secret: 'globex-secret-0123456789', id: 'globex#1', scopes: ['orders', 'privacy'] },
  ]);

  it('maps a secret to its tenant and nothing else', () => {
    expect(registry.tenantFor('acme-secret-0123456789')).toBe('acme');
    expect(registry.tenantFor('globex-secret-0123456789')).toBe('globex');
    expect(registry.tenantFor('acme-secret-012345678')).toBeUndefined();
    expect(registry.tenantFor('')).toBeUndefined();
  });

  it('names the key and its scopes, never the secret', () => {
    expect(registry.authenticate('Bearer globex-secret-0123456789')).toEqual({
      tenant: 'globex',
      keyId: 'globex#1',
      scopes: ['orders', 'privacy'],
    });
    expect(registry.authenticate('Bearer nope-nope-nope-nope')).toBeUndefined();
    expect(registry.authenticate(undefined)).toBeUndefined();
  });

  it('keeps no plaintext secret', () => {
    expect(JSON.stringify(registry)).not.toContain('acme-secret');
  });
});

describe('bearerSecret', () => {
  it('reads only a well-formed Bearer header', () => {
    expect(bearerSecret('Bearer abc')).toBe('abc');
    expect(bearerSecret('bearer abc')).toBeUndefined();
    expect(bearerSecret('Bearer ')).toBeUndefined();
    expect(bearerSecret('Basic abc')).toBeUndefined();
    expect(bearerSecret(undefined)).toBeUndefined();
    expect(bearerSecret(`Bearer ${'x'.repeat(600)}`)).toBeUndefined();
  });
});
