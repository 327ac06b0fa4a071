import { afterAll, afterEach, beforeAll, beforeEach, expect } from '@jest/globals';
import { startApp, type TestApp } from '../test-app.js';
import { StripeFake } from './stripe-fake.js';

export interface StripeTestApp {
  fake: StripeFake;
  /** The app on the fake, once beforeAll has run. */
  readonly app: TestApp;
}

/**
 * The service on the Stripe adapter against a fresh fake, for one describe block: both reset before each test,
 * the fake's contract violations checked after each, both stopped at the end. No retries of the SDK's own.
 */
export function useStripeTestApp(dbName: string): StripeTestApp {
  const fake = new StripeFake();
  let app: TestApp | undefined;
  beforeAll(async () => {
    await fake.start();
    app = await startApp({ dbName, env: { ...fake.serviceEnv(), STRIPE_MAX_NETWORK_RETRIES: '0' } });
  });
  beforeEach(async () => {
    fake.reset();
    await app!.reset();
  });
  afterEach(() => expect(fake.violations.splice(0)).toEqual([]));
  afterAll(async () => {
    await app?.close();
    await fake.stop();
  });
  return {
    fake,
    get app() {
      return app!;
    },
  };
}
