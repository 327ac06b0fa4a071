import { describe, expect, it } from '@jest/globals';
import { configurationProblems as problemsOf, loadConfiguration, logFormat } from './configuration.js';

const keys = { API_KEYS: 'acme:acme-secret-0123456789' };

describe('app settings', () => {
  it('binds loopback while the dev tenant is active, every interface otherwise', () => {
    expect(loadConfiguration({}).app.host).toBe('127.0.0.1');
    expect(loadConfiguration({ API_KEYS: keys.API_KEYS }).app.host).toBe('0.0.0.0');
    expect(loadConfiguration({ API_KEYS: keys.API_KEYS, HOST: '10.0.0.5' }).app.host).toBe('10.0.0.5');
    expect(loadConfiguration({ HOST: '::1' }).app.host).toBe('::1');
    expect(problemsOf({ HOST: '0.0.0.0' })).toEqual([expect.stringMatching(/^HOST: the dev tenant .* loopback only/)]);
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
