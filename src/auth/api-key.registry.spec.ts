import { describe, expect, it, jest } from '@jest/globals';
import type { IncomingMessage } from 'node:http';
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

  it('digests the key of a request once, however often the request is asked about (the early refusal, then the guard)', () => {
    const fresh = new ApiKeyRegistry([{ tenant: 'acme', secret: 'acme-secret-0123456789', id: 'acme#1', scopes: ['orders'] }]);
    const identify = jest.spyOn(fresh, 'identify');
    const known = { headers: { authorization: 'Bearer acme-secret-0123456789' } } as IncomingMessage;
    const stranger = { headers: { authorization: 'Bearer guess-0123456789' } } as IncomingMessage;
    expect(fresh.authenticateRequest(known)?.tenant).toBe('acme');
    expect(fresh.authenticateRequest(known)?.tenant).toBe('acme');
    expect(fresh.authenticateRequest(stranger)).toBeUndefined();
    expect(fresh.authenticateRequest(stranger)).toBeUndefined();
    expect(identify).toHaveBeenCalledTimes(2);
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
