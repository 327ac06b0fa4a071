import { describe, expect, it } from '@jest/globals';
import { configurationProblems as problemsOf, environmentVariables, keyId, loadConfiguration } from './configuration.js';

// What no one namespace decides alone: the defaults, the names in every message, and where the dev defaults stop.
// Each namespace's own rules are in the spec beside its file (app, http, keys, metrics, redis, security, webhooks).
const key = Buffer.alloc(32, 7).toString('base64');

describe('loadConfiguration', () => {
  it('has working defaults for development', () => {
    const config = loadConfiguration({});
    expect(config.app.port).toBe(3000);
    expect(config.idempotency.ttlSeconds).toBe(86400);
    expect(config.idempotency.lockTimeoutMs).toBe(30000);
    expect(config.idempotency.inFlightWaitMs).toBe(5000);
    expect(config.idempotency.inFlightMaxWaiters).toBe(1000);
    expect(config.idempotency.resumeWindowMs).toBe(300000);
    expect(config.reaper.intervalMs).toBe(10000);
    expect(config.security.usingDevApiKey).toBe(true);
  });

  it('names the variable that is wrong', () => {
    expect(problemsOf({ PORT: 'abc' })).toEqual([expect.stringMatching(/^PORT: /)]);
    expect(problemsOf({ PORT: '70000' })).toEqual([expect.stringMatching(/^PORT: /)]);
    expect(problemsOf({ IDEMPOTENCY_TTL_SECONDS: '-1' })).toEqual([expect.stringMatching(/^IDEMPOTENCY_TTL_SECONDS: /)]);
    expect(problemsOf({ REAPER_ENABLED: 'yes' })).toEqual([expect.stringMatching(/^REAPER_ENABLED: /)]);
    expect(problemsOf({ IDEMPOTENCY_IN_FLIGHT_WAIT_MS: '-1' })).toEqual([expect.stringMatching(/^IDEMPOTENCY_IN_FLIGHT_WAIT_MS: /)]);
    expect(problemsOf({ IDEMPOTENCY_IN_FLIGHT_MAX_WAITERS: 'many' })).toEqual([
      expect.stringMatching(/^IDEMPOTENCY_IN_FLIGHT_MAX_WAITERS: /),
    ]);
    expect(problemsOf({ IDEMPOTENCY_RESUME_WINDOW_MS: '86400001' })).toEqual([expect.stringMatching(/^IDEMPOTENCY_RESUME_WINDOW_MS: /)]);
    expect(problemsOf({ MONGODB_URI: 'http://x' })).toEqual([expect.stringMatching(/^MONGODB_URI: /)]);
  });

  it('reads "false" as false', () => {
    expect(loadConfiguration({ REAPER_ENABLED: 'false' }).reaper.enabled).toBe(false);
  });

  it('requires a URI, API keys and an encryption key in production, and refuses fault injection there', () => {
    const problems = problemsOf({ NODE_ENV: 'production', FAULT_INJECTION: 'true' });
    expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'API_KEYS',
      'FAULT_INJECTION',
      'IDEMPOTENCY_ENCRYPTION_KEY',
      'MONGODB_URI',
      'PRIVACY_DIGEST_KEY',
    ]);
    const ok = loadConfiguration({
      NODE_ENV: 'production',
      MONGODB_URI: 'mongodb://db:27017/?replicaSet=rs0',
      API_KEYS: 'acme:acme-secret-0123456789',
      IDEMPOTENCY_ENCRYPTION_KEY: key,
      PRIVACY_DIGEST_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    expect(ok.security.apiKeys).toEqual([{ tenant: 'acme', secret: 'acme-secret-0123456789', id: 'acme#1', scopes: ['orders'] }]);
    expect(ok.idempotency.encryptionKey.id).toBe(keyId(Buffer.from(key, 'base64')));
    expect(ok.idempotency.usingDevDigestKey).toBe(false);
  });

  describe('dev defaults fail closed (security review 2, #3)', () => {
    const realUri = 'mongodb://prod-db-1,prod-db-2/?replicaSet=rs0';
    const digest = Buffer.alloc(32, 3).toString('base64');
    const keys = { API_KEYS: 'acme:acme-secret-0123456789', IDEMPOTENCY_ENCRYPTION_KEY: key, PRIVACY_DIGEST_KEY: digest };
    const devKey = Buffer.alloc(32, 'dev-only-idempotency-key').toString('base64');

    it('a real MONGODB_URI without NODE_ENV needs real keys and refuses the test switches', () => {
      const problems = problemsOf({ MONGODB_URI: realUri, BENCH_DISABLE_IDEMPOTENCY: 'true', FAULT_INJECTION: 'true' });
      expect(problems.map((p) => p.split(':')[0]).sort()).toEqual([
        'API_KEYS',
        'BENCH_DISABLE_IDEMPOTENCY',
        'FAULT_INJECTION',
        'IDEMPOTENCY_ENCRYPTION_KEY',
        'PRIVACY_DIGEST_KEY',
      ]);
      expect(problems.join('\n')).toMatch(/when MONGODB_URI is set/);
      expect(problemsOf({ MONGODB_URI: realUri, NODE_ENV: 'development', ...keys })).toEqual([]);
    });

    it('keeps them for the embedded store and for tests', () => {
      const embedded = loadConfiguration({ BENCH_DISABLE_IDEMPOTENCY: 'true' });
      expect(embedded.security.usingDevApiKey).toBe(true);
      expect(embedded.idempotency.usingDevEncryptionKey).toBe(true);
      expect(embedded.app.benchDisableIdempotency).toBe(true);
      const test = loadConfiguration({ NODE_ENV: 'test', MONGODB_URI: realUri, FAULT_INJECTION: 'true' });
      expect(test.security.usingDevApiKey).toBe(true);
      expect(test.app.faultInjection).toBe(true);
    });

    it('refuses the published dev secret and dev key bytes with a real store, even set explicitly', () => {
      for (const NODE_ENV of ['production', 'development']) {
        const problems = problemsOf({
          NODE_ENV,
          MONGODB_URI: realUri,
          API_KEYS: 'acme:dev-secret-change-me',
          IDEMPOTENCY_ENCRYPTION_KEY: `mine:${devKey}`,
          PRIVACY_DIGEST_KEY: Buffer.alloc(32, 'dev-only-privacy-digest-key').toString('base64'),
        });
        expect(problems).toEqual([
          expect.stringMatching(/^API_KEYS: the published dev secret is refused/),
          expect.stringMatching(/^IDEMPOTENCY_ENCRYPTION_KEY\/IDEMPOTENCY_DECRYPTION_KEYS: the published dev key is refused/),
          expect.stringMatching(/^PRIVACY_DIGEST_KEY: the published dev key is refused/),
        ]);
        expect(problemsOf({ NODE_ENV, MONGODB_URI: realUri, ...keys, IDEMPOTENCY_DECRYPTION_KEYS: devKey })).toEqual([
          expect.stringMatching(/the published dev key is refused/),
        ]);
      }
    });
  });

  it('never echoes a secret, a key or the credentials of a URI', () => {
    const problems = problemsOf({
      MONGODB_URI: 'mongodb://admin:S3cretPassw0rd@db host/?replicaSet=rs0',
      REDIS_URL: 'redis+sentinel://:R3disPass@cache:26379',
      IDEMPOTENCY_ENCRYPTION_KEY: 'k9:not-base64-S3cretKeyMaterial!',
      API_KEYS: 'acme:short',
    }).join('\n');
    expect(problems).toMatch(/^MONGODB_URI: .*\(got "mongodb:\/\/\*\*\*@db host\/\?replicaSet=rs0"\)/m);
    expect(problems).toMatch(/^REDIS_URL: .*\(got "redis\+sentinel:\/\/\*\*\*@cache:26379"\)/m);
    for (const secret of ['S3cretPassw0rd', 'R3disPass', 'S3cretKeyMaterial', 'short']) expect(problems).not.toContain(secret);
  });

  it('declares every variable in one namespace only, and keeps the names operators set', () => {
    const names = environmentVariables();
    expect(names.length).toBeGreaterThan(70);
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['NODE_ENV', 'PORT', 'MONGODB_URI', 'API_KEYS', 'REDIS_URL', 'WEBHOOK_SECRETS']));
  });
});
