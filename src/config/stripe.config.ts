import { registerAs, type ConfigType } from '@nestjs/config';
import { parseStripeSettings, StripeSettingsError, type StripeSettings } from '../payment-stripe/stripe.settings.js';

/** PAYMENT_PROVIDER: which adapter sits behind the payment gateway port. The simulator is the embedded default. */
export type PaymentProvider = 'simulator' | 'stripe';

export interface StripeConfigSettings {
  provider: PaymentProvider;
  /** Null unless PAYMENT_PROVIDER=stripe: simulator deployments need no Stripe secret. */
  stripe: StripeSettings | null;
}

/**
 * Fails closed, at boot, naming the variable and never its value: an
 * unknown provider, and with `stripe` a missing or malformed secret, a live
 * key outside production or a test key in production
 * (payment-stripe/stripe.settings.ts).
 */
export function stripeConfigSettings(env: Record<string, string | undefined>): StripeConfigSettings {
  const provider = env.PAYMENT_PROVIDER ?? 'simulator';
  if (provider !== 'simulator' && provider !== 'stripe') throw new StripeSettingsError('PAYMENT_PROVIDER', 'must be simulator or stripe');
  return { provider, stripe: provider === 'stripe' ? parseStripeSettings(env, env.NODE_ENV === 'production') : null };
}

export const stripeConfig = registerAs('stripe', () => stripeConfigSettings(process.env));
export type StripeConfig = ConfigType<typeof stripeConfig>;
