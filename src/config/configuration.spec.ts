import { describe, expect, it } from '@jest/globals';
import { ConfigurationError, loadConfiguration, logFormat } from './configuration.js';

const key = Buffer.alloc(32, 7).toString('base64');

function problemsOf(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfiguration(env);
    return [];
  } catch (error) {
    if (error instanceof ConfigurationError) return error.problems;
    throw error;
  }
}

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
    expect(ok.security.apiKeys).toEqual([{ tenant: 'acme', secret: 'acme-secret-0123456789' }]);
    expect(ok.idempotency.encryptionKey.id).toBe('k1');
    expect(ok.idempotency.usingDevDigestKey).toBe(false);
  });

  it('validates the privacy digest key, and refuses a Redis without a password in production', () => {
    expect(problemsOf({ PRIVACY_DIGEST_KEY: 'c2hvcnQ=' })).toEqual([expect.stringMatching(/^PRIVACY_DIGEST_KEY: .*32 bytes/)]);
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

  it('validates API keys and encryption keys', () => {
    expect(problemsOf({ API_KEYS: 'acme:short' })).toEqual([expect.stringMatching(/^API_KEYS: .*16 characters/)]);
    expect(problemsOf({ API_KEYS: 'no-colon' })).toEqual([expect.stringMatching(/^API_KEYS: /)]);
    expect(problemsOf({ IDEMPOTENCY_ENCRYPTION_KEY: 'c2hvcnQ=' })).toEqual([
      expect.stringMatching(/^IDEMPOTENCY_ENCRYPTION_KEY: .*32 bytes/),
    ]);
  });

  it('keeps retired decryption keys after the current one', () => {
    const old = Buffer.alloc(32, 1).toString('base64');
    const config = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: `k2:${key}`, IDEMPOTENCY_DECRYPTION_KEYS: `k1:${old}` });
    expect(config.idempotency.decryptionKeys.map((k) => k.id)).toEqual(['k2', 'k1']);
  });

  it('bounds every HTTP and store wait by default', () => {
    const config = loadConfiguration({});
    expect(config.http).toEqual({
      bodyLimitBytes: 102400,
      headersTimeoutMs: 5000,
      requestTimeoutMs: 8000,
      keepAliveTimeoutMs: 5000,
      jsonMaxDepth: 8,
      jsonMaxValues: 1000,
    });
    expect(config.mongo).toMatchObject({
      serverSelectionTimeoutMs: 3000,
      connectTimeoutMs: 3000,
      socketTimeoutMs: 3000,
      poolWaitTimeoutMs: 2000,
      pingTimeoutMs: 1000,
    });
    expect(config.app.logRefusedPerSecond).toBe(10);
  });

  it('refuses limits that contradict each other', () => {
    expect(problemsOf({ HTTP_HEADERS_TIMEOUT_MS: '9000', HTTP_REQUEST_TIMEOUT_MS: '8000' })).toEqual([
      expect.stringMatching(/^HTTP_HEADERS_TIMEOUT_MS: /),
    ]);
    expect(problemsOf({ RATE_LIMIT_PER_KEY_PER_MINUTE: '10', RATE_LIMIT_PER_TENANT_PER_MINUTE: '0' })).toEqual([
      expect.stringMatching(/^RATE_LIMIT_PER_KEY_PER_MINUTE: .*tenant limit/),
    ]);
    expect(problemsOf({ RATE_LIMIT_PER_KEY_PER_MINUTE: '0', RATE_LIMIT_PER_TENANT_PER_MINUTE: '0' })).toEqual([]);
    expect(problemsOf({ HTTP_JSON_MAX_DEPTH: '1' })).toEqual([expect.stringMatching(/^HTTP_JSON_MAX_DEPTH: /)]);
  });

  it('needs FAULT_INJECTION for FAULT_CRASH_AT', () => {
    expect(problemsOf({ FAULT_CRASH_AT: 'after-claim' })).toEqual([expect.stringMatching(/^FAULT_CRASH_AT: /)]);
    expect(problemsOf({ FAULT_CRASH_AT: 'nowhere', FAULT_INJECTION: 'true' })).toEqual([expect.stringMatching(/^FAULT_CRASH_AT: /)]);
  });
});

describe('logFormat', () => {
  it('is pretty for a person at a terminal outside production, JSON for pipes, files and production', () => {
    expect(logFormat('auto', false, true)).toBe('pretty');
    expect(logFormat('auto', false, false)).toBe('json');
    expect(logFormat('auto', true, true)).toBe('json');
  });

  it('does what LOG_FORMAT says when it says it, and refuses anything else', () => {
    expect(logFormat('pretty', true, false)).toBe('pretty');
    expect(logFormat('json', false, true)).toBe('json');
    expect(problemsOf({ LOG_FORMAT: 'xml' }).join('\n')).toMatch(/LOG_FORMAT/);
  });
});
