import { describe, expect, it } from '@jest/globals';
import { configurationProblems as problemsOf, loadConfiguration } from './configuration.js';

describe('http settings', () => {
  it('trusts no proxy unless told which (security review 2, #16)', () => {
    expect(loadConfiguration({}).http.trustProxy).toBe(false);
    expect(loadConfiguration({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' }).http.trustProxy).toBe('10.0.0.0/8,127.0.0.1');
    expect(loadConfiguration({ TRUST_PROXY: 'true' }).http.trustProxy).toBe(true);
    for (const bad of ['everyone', '1']) expect(problemsOf({ TRUST_PROXY: bad })).toEqual([expect.stringMatching(/^TRUST_PROXY: /)]);
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
    expect(problemsOf({ HTTP_JSON_MAX_DEPTH: '1' })).toEqual([expect.stringMatching(/^HTTP_JSON_MAX_DEPTH: /)]);
  });
});
