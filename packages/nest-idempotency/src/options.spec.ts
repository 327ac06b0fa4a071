import { describe, expect, it } from '@jest/globals';
import * as api from './index.js';
import { IdempotencyOptionsError, resolveOptions, type IdempotencyModuleOptions } from './options.js';

const valid: IdempotencyModuleOptions = {
  service: 'widgets',
  tenant: () => 'acme',
  encryption: { current: { id: 'k1', key: Buffer.alloc(32, 1) } },
  digestKey: Buffer.alloc(32, 2),
};

describe('IdempotencyModule options', () => {
  it('fills every default, and decrypts with the current key when no list is given', () => {
    const settings = resolveOptions(valid);
    expect(settings).toMatchObject({
      serviceName: 'widgets',
      ttlSeconds: 86_400,
      lockTimeoutMs: 30_000,
      tombstoneSeconds: 2_592_000,
      inFlightWaitMs: 5_000,
      inFlightMaxWaiters: 1_000,
      resumeWindowMs: 300_000,
      transactionMaxRetryMs: 5_000,
      reaper: { enabled: true, intervalMs: 10_000, batchSize: 50, timeBudgetMs: 5_000 },
      fastPath: null,
      indexes: 'bootstrap',
      bypass: false,
    });
    expect(settings.decryptionKeys).toEqual([valid.encryption.current]);
  });

  it('refuses at boot with every problem named by its option path', () => {
    const bad = {
      service: 'a:b',
      encryption: { current: { id: 'k1', key: Buffer.alloc(16) } },
      digestKey: Buffer.alloc(4),
      ttlSeconds: 0,
      fastPath: { url: 'http://redis', namespace: '' },
      indexes: 'sometimes',
    } as unknown as IdempotencyModuleOptions;
    let error: unknown;
    try {
      resolveOptions(bad);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(IdempotencyOptionsError);
    const problems = (error as IdempotencyOptionsError).problems.join('\n');
    for (const path of [
      'service:',
      'tenant:',
      'encryption.current:',
      'digestKey:',
      'ttlSeconds:',
      'fastPath.url:',
      'fastPath.namespace:',
      'indexes:',
    ]) {
      expect(problems).toContain(path);
    }
  });

  it('refuses a decryption list without the current key (new responses could not be read back)', () => {
    expect(() =>
      resolveOptions({ ...valid, encryption: { current: valid.encryption.current, decrypt: [{ id: 'old', key: Buffer.alloc(32, 3) }] } }),
    ).toThrow('encryption.decrypt: must include encryption.current');
  });
});

describe('problemTypeBaseUrl (issue 34: type URIs were hard-coded to errors.example.com)', () => {
  it('defaults to the example base and refuses anything but an absolute http(s) URL ending in /', () => {
    expect(resolveOptions(valid).problemTypeBaseUrl).toBe('https://errors.example.com/');
    expect(resolveOptions({ ...valid, problemTypeBaseUrl: 'https://docs.acme.dev/problems/' }).problemTypeBaseUrl).toBe(
      'https://docs.acme.dev/problems/',
    );
    for (const bad of ['https://docs.acme.dev/problems', '/problems/', 'ftp://x/', 'not a url/']) {
      expect(() => resolveOptions({ ...valid, problemTypeBaseUrl: bad })).toThrow(/problemTypeBaseUrl/);
    }
  });
});

describe('the errors a client can get', () => {
  it('every exported IdempotencyError carries a 4xx/5xx status and a snake_case code (no 500 by omission)', () => {
    type ErrorClass = (new (...args: unknown[]) => api.IdempotencyError) & { name: string };
    const errors = (Object.values(api) as unknown[]).filter(
      (value): value is ErrorClass => typeof value === 'function' && (value as ErrorClass).prototype instanceof api.IdempotencyError,
    );
    expect(errors.length).toBeGreaterThanOrEqual(8);
    for (const ErrorClass of errors) {
      const error = new ErrorClass(1);
      expect([ErrorClass.name, error.status >= 400 && error.status < 600]).toEqual([ErrorClass.name, true]);
      expect(error.code).toMatch(/^[a-z]+(_[a-z]+)*$/);
    }
  });
});
