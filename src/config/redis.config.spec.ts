import { describe, expect, it } from '@jest/globals';
import { configurationProblems as problemsOf, loadConfiguration } from './configuration.js';

const key = Buffer.alloc(32, 7).toString('base64');

describe('redis settings', () => {
  it('leaves the Redis fast path off unless REDIS_URL is set, with time-boxed calls and a breaker', () => {
    expect(loadConfiguration({}).redis).toEqual({
      url: undefined,
      commandTimeoutMs: 25,
      breakerErrorPercent: 50,
      breakerVolumeThreshold: 10,
      breakerResetMs: 5000,
      namespace: 'idem:orders',
    });
    expect(loadConfiguration({ REDIS_URL: 'rediss://cache:6380/0' }).redis.url).toBe('rediss://cache:6380/0');
    expect(loadConfiguration({ REDIS_NAMESPACE: 'payments-eu:prod' }).redis.namespace).toBe('payments-eu:prod');
    expect(problemsOf({ REDIS_NAMESPACE: 'has space' })).toEqual([expect.stringMatching(/^REDIS_NAMESPACE: /)]);
    expect(problemsOf({ REDIS_URL: 'http://cache' })).toEqual([expect.stringMatching(/^REDIS_URL: /)]);
    expect(problemsOf({ REDIS_COMMAND_TIMEOUT_MS: '0' })).toEqual([expect.stringMatching(/^REDIS_COMMAND_TIMEOUT_MS: /)]);
  });

  it('refuses a Redis without a password in production', () => {
    const production = {
      NODE_ENV: 'production',
      MONGODB_URI: 'mongodb://db:27017/?replicaSet=rs0',
      API_KEYS: 'acme:acme-secret-0123456789',
      IDEMPOTENCY_ENCRYPTION_KEY: key,
      PRIVACY_DIGEST_KEY: Buffer.alloc(32, 7).toString('base64'),
    };
    expect(problemsOf({ ...production, REDIS_URL: 'redis://cache:6379' })).toEqual([expect.stringMatching(/^REDIS_URL: .*password/)]);
    expect(problemsOf({ ...production, REDIS_URL: 'rediss://svc:pw-0123456789@cache:6380' })).toEqual([]);
  });
});
