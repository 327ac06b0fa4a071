import { describe, expect, it } from '@jest/globals';
import { configurationProblems as problemsOf, loadConfiguration } from './configuration.js';

const key = Buffer.alloc(32, 7).toString('base64');

describe('metrics settings', () => {
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
});
