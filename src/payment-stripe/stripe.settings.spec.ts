import { describe, expect, it } from '@jest/globals';
import { parseStripeSettings, StripeSettingsError } from './stripe.settings.js';

const TEST_KEY = 'sk_test_51Hx0123456789abcdefMARKER';
const LIVE_KEY = 'sk_live_51Hx0123456789abcdefMARKER';
const WEBHOOK = 'whsec_0123456789abcdefMARKER';

function refusal(env: Record<string, string>, production: boolean): StripeSettingsError {
  try {
    parseStripeSettings(env, production);
  } catch (error) {
    if (error instanceof StripeSettingsError) return error;
    throw error;
  }
  throw new Error('the settings were accepted');
}

describe('Stripe settings: fail closed, secrets never echoed', () => {
  it('accepts a test key outside production, with the documented defaults', () => {
    expect(parseStripeSettings({ STRIPE_SECRET_KEY: TEST_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK }, false)).toEqual({
      secretKey: TEST_KEY,
      webhookSecret: WEBHOOK,
      maxNetworkRetries: 1,
      timeoutMs: 10_000,
      retryAfterSeconds: 2,
      apiBase: null,
    });
  });

  it('refuses a live key outside production and a test key in production, naming the variable but not the key', () => {
    const live = refusal({ STRIPE_SECRET_KEY: LIVE_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK }, false);
    expect(live.message).toMatch(/^STRIPE_SECRET_KEY: a live key/);
    const test = refusal({ STRIPE_SECRET_KEY: TEST_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK }, true);
    expect(test.message).toMatch(/^STRIPE_SECRET_KEY: a test key/);
    for (const error of [live, test]) expect(error.message).not.toContain('MARKER');
    expect(parseStripeSettings({ STRIPE_SECRET_KEY: LIVE_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK }, true).secretKey).toBe(LIVE_KEY);
  });

  it('refuses a missing or malformed key or webhook secret', () => {
    expect(refusal({ STRIPE_WEBHOOK_SECRET: WEBHOOK }, false).message).toMatch(/^STRIPE_SECRET_KEY:/);
    expect(refusal({ STRIPE_SECRET_KEY: 'pk_test_0123456789abcdef', STRIPE_WEBHOOK_SECRET: WEBHOOK }, false).message).toMatch(
      /^STRIPE_SECRET_KEY:/,
    );
    expect(refusal({ STRIPE_SECRET_KEY: TEST_KEY }, false).message).toMatch(/^STRIPE_WEBHOOK_SECRET:/);
    const bad = refusal({ STRIPE_SECRET_KEY: TEST_KEY, STRIPE_WEBHOOK_SECRET: 'not-a-secret-MARKER' }, false);
    expect(bad.message).not.toContain('not-a-secret');
  });

  it('points the SDK at a local fake outside production only', () => {
    const env = { STRIPE_SECRET_KEY: TEST_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK, STRIPE_API_BASE: 'http://127.0.0.1:12111' };
    expect(parseStripeSettings(env, false).apiBase).toEqual({ host: '127.0.0.1', port: 12111, protocol: 'http' });
    expect(refusal({ ...env, STRIPE_SECRET_KEY: LIVE_KEY }, true).message).toMatch(/^STRIPE_API_BASE:/);
    expect(refusal({ ...env, STRIPE_MAX_NETWORK_RETRIES: '9' }, false).message).toMatch(/^STRIPE_MAX_NETWORK_RETRIES:/);
  });
});
