import { describe, expect, it } from '@jest/globals';
import { allConfig } from './config.tokens.js';
import { stripeConfig } from './stripe.config.js';

/**
 * PAYMENT_PROVIDER=stripe fails closed at boot: ConfigModule calls every
 * namespace's factory (allConfig) while the app module compiles, so a
 * refusal here is a refused start. Tested on the factory itself - an app
 * booted to be refused leaves its store connection opening behind it.
 */
describe('PAYMENT_PROVIDER=stripe fails closed at boot', () => {
  const withEnv = <T>(env: Record<string, string>, run: () => T): T => {
    const saved = { ...process.env };
    Object.assign(process.env, { NODE_ENV: 'test', PAYMENT_PROVIDER: 'stripe' }, env);
    try {
      return run();
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  };
  const refusal = (env: Record<string, string>): Error | null =>
    withEnv(env, () => {
      try {
        stripeConfig();
        return null;
      } catch (error) {
        return error as Error;
      }
    });

  it('is one of the namespaces the app loads at boot', () => {
    expect(allConfig).toContain(stripeConfig);
  });

  it('refuses a live key outside production, naming the variable and never the key', () => {
    const refused = refusal({
      STRIPE_SECRET_KEY: 'sk_live_51Hx0123456789abcdefLIVEKEY',
      STRIPE_WEBHOOK_SECRET: 'whsec_test_secret_0123456789',
    });
    expect(refused?.message).toMatch(/STRIPE_SECRET_KEY: a live key \(sk_live_\) is refused outside production/);
    expect(refused?.message).not.toContain('LIVEKEY');
  });

  it('refuses to start without the webhook secret', () => {
    expect(refusal({ STRIPE_SECRET_KEY: 'sk_test_fake0123456789' })?.message).toMatch(/STRIPE_WEBHOOK_SECRET/);
  });

  it('refuses an unknown provider', () => {
    expect(refusal({ PAYMENT_PROVIDER: 'paypal' })?.message).toMatch(/PAYMENT_PROVIDER/);
  });
});
