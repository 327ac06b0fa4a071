import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { ResponseCipher } from '@idempotent-orders/nest-idempotency/testing';
import { ConfigurationError, keyId, loadConfiguration, logFormat } from './configuration.js';

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
    expect(ok.security.apiKeys).toEqual([{ tenant: 'acme', secret: 'acme-secret-0123456789', id: 'acme#1', scopes: ['orders'] }]);
    expect(ok.idempotency.encryptionKey.id).toBe(keyId(Buffer.from(key, 'base64')));
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

  it('rotates as the README says: a bare new key and the old one listed as k1 both open (security review 2, #2)', () => {
    const old = randomBytes(32);
    const before = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: old.toString('base64') }).idempotency;
    const sealedBefore = new ResponseCipher(before.encryptionKey, before.decryptionKeys).seal('before', 'rec-1');
    const fresh = randomBytes(32).toString('base64');
    for (const retired of [`k1:${old.toString('base64')}`, old.toString('base64')]) {
      const after = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: fresh, IDEMPOTENCY_DECRYPTION_KEYS: retired }).idempotency;
      expect(new Set(after.decryptionKeys.map((k) => k.id)).size).toBe(2);
      const cipher = new ResponseCipher(after.encryptionKey, after.decryptionKeys);
      expect(cipher.open(cipher.seal('after', 'rec-2'), 'rec-2')).toBe('after');
      expect(cipher.open(sealedBefore, 'rec-1')).toBe('before');
    }
    // Bodies an earlier release sealed with a bare key carry the id "k1": still opened after the upgrade.
    const legacy = new ResponseCipher({ id: 'k1', key: old }, [{ id: 'k1', key: old }]).seal('legacy', 'rec-3');
    const upgraded = loadConfiguration({ IDEMPOTENCY_ENCRYPTION_KEY: old.toString('base64') }).idempotency;
    expect(new ResponseCipher(upgraded.encryptionKey, upgraded.decryptionKeys).open(legacy, 'rec-3')).toBe('legacy');
  });

  it('refuses two keys with one id, naming the id and never a key', () => {
    const a = randomBytes(32).toString('base64');
    const b = randomBytes(32).toString('base64');
    const problems = problemsOf({ IDEMPOTENCY_ENCRYPTION_KEY: `k2:${a}`, IDEMPOTENCY_DECRYPTION_KEYS: `k2:${b}` });
    expect(problems).toEqual([expect.stringMatching(/key ids must be unique \(repeated: k2\)/)]);
    expect(problems.join('')).not.toContain(a);
    expect(problems.join('')).not.toContain(b);
    expect(problemsOf({ IDEMPOTENCY_ENCRYPTION_KEY: a, IDEMPOTENCY_DECRYPTION_KEYS: a })).toEqual([
      expect.stringMatching(/key ids must be unique/),
    ]);
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

    it('binds loopback while the dev tenant is active, every interface otherwise', () => {
      expect(loadConfiguration({}).app.host).toBe('127.0.0.1');
      expect(loadConfiguration({ API_KEYS: keys.API_KEYS }).app.host).toBe('0.0.0.0');
      expect(loadConfiguration({ API_KEYS: keys.API_KEYS, HOST: '10.0.0.5' }).app.host).toBe('10.0.0.5');
      expect(loadConfiguration({ HOST: '::1' }).app.host).toBe('::1');
      expect(problemsOf({ HOST: '0.0.0.0' })).toEqual([expect.stringMatching(/^HOST: the dev tenant .* loopback only/)]);
    });
  });

  describe('API keys and config errors (security review 2, #8)', () => {
    it('refuses one secret for two tenants (the first tenant would win)', () => {
      expect(problemsOf({ API_KEYS: 'acme:same-secret-0123456789,globex:same-secret-0123456789' })).toEqual([
        'API_KEYS: tenants "acme" and "globex" have the same secret; every secret must be unique',
      ]);
      expect(loadConfiguration({ API_KEYS: 'acme:one-secret-0123456789,acme:two-secret-0123456789' }).security.apiKeys).toHaveLength(2);
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
  });

  it('trusts no proxy unless told which (security review 2, #16)', () => {
    expect(loadConfiguration({}).http.trustProxy).toBe(false);
    expect(loadConfiguration({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }).http.trustProxy).toBe('10.0.0.0/8,127.0.0.1');
    expect(loadConfiguration({ TRUST_PROXY: 'true' }).http.trustProxy).toBe(true);
    for (const bad of ['everyone', '1']) expect(problemsOf({ TRUST_PROXY: bad })).toEqual([expect.stringMatching(/^TRUST_PROXY: /)]);
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

  it('with a real store and NODE_ENV unset: docs off and the metrics listener on loopback unless told otherwise (security review 3, SEC4-07)', () => {
    const realStore = {
      MONGODB_URI: 'mongodb://db/?replicaSet=rs0',
      API_KEYS: 'acme:acme-secret-0123456789',
      IDEMPOTENCY_ENCRYPTION_KEY: key,
      PRIVACY_DIGEST_KEY: Buffer.alloc(32, 3).toString('base64'),
    };
    for (const NODE_ENV of [undefined, 'development']) {
      const config = loadConfiguration({ ...realStore, NODE_ENV });
      expect({ NODE_ENV, docs: config.app.docsEnabled, metrics: config.metrics }).toEqual({
        NODE_ENV,
        docs: false,
        metrics: { listener: 'port', port: 9464, host: '127.0.0.1', token: undefined },
      });
    }
    // Said explicitly, as a container does for its scraper's network; and docs when asked for.
    expect(loadConfiguration({ ...realStore, METRICS_HOST: '0.0.0.0' }).metrics).toMatchObject({ host: '0.0.0.0' });
    expect(loadConfiguration({ ...realStore, DOCS_ENABLED: 'true' }).app.docsEnabled).toBe(true);
    // Where dev defaults are allowed (no store, or NODE_ENV=test), docs stay on.
    expect(loadConfiguration({}).app.docsEnabled).toBe(true);
    expect(loadConfiguration({ NODE_ENV: 'test', MONGODB_URI: realStore.MONGODB_URI }).app.docsEnabled).toBe(true);
  });

  it('keeps /metrics off the public API port wherever there is a real store, and docs off in production (security review 2, #6)', () => {
    const realStore = {
      MONGODB_URI: 'mongodb://db/?replicaSet=rs0',
      API_KEYS: 'acme:acme-secret-0123456789',
      IDEMPOTENCY_ENCRYPTION_KEY: key,
      PRIVACY_DIGEST_KEY: Buffer.alloc(32, 3).toString('base64'),
    };
    expect(loadConfiguration(realStore).metrics).toEqual({ listener: 'port', port: 9464, host: '127.0.0.1', token: undefined });
    expect(loadConfiguration({ ...realStore, METRICS_PORT: '9100', METRICS_HOST: '10.0.0.7' }).metrics).toMatchObject({
      port: 9100,
      host: '10.0.0.7',
    });
    const token = 'metrics-token-0123456789abcdef0123456789';
    expect(loadConfiguration({ ...realStore, METRICS_TOKEN: token }).metrics).toEqual({ listener: 'api', host: '0.0.0.0', token });
    expect(loadConfiguration({}).metrics.listener).toBe('api');
    expect(loadConfiguration({ NODE_ENV: 'test', MONGODB_URI: realStore.MONGODB_URI }).metrics.listener).toBe('api');
    expect(problemsOf({ METRICS_TOKEN: 'short' })).toEqual([
      expect.stringMatching(/^METRICS_TOKEN: .*32 characters \(got 5 characters, not shown\)/),
    ]);
    expect(problemsOf({ METRICS_PORT: '3000' })).toEqual([expect.stringMatching(/^METRICS_PORT: must differ from PORT/)]);
    expect(loadConfiguration({}).app.docsEnabled).toBe(true);
    expect(loadConfiguration({ ...realStore, NODE_ENV: 'production' }).app.docsEnabled).toBe(false);
    expect(loadConfiguration({ ...realStore, NODE_ENV: 'production', DOCS_ENABLED: 'true' }).app.docsEnabled).toBe(true);
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
      trustProxy: false,
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
