/**
 * What Stripe accepts as a charge amount, in the currency's minor unit
 * (docs.stripe.com/currencies): "up to eight digits", at least the
 * per-currency minimum (what is left after fees must be worth about 0.50
 * USD), and in three-decimal currencies a multiple of 10. Outside these
 * Stripe answers invalid_request_error, which would reach the client as a
 * 500 after a pending order; checked before anything is claimed instead.
 */
export const STRIPE_MAX_AMOUNT_MINOR = 99_999_999;

/** Stripe's minimum charge amounts, in minor units, for the currencies it lists (others: at least 1). */
const MINIMUM_MINOR: Readonly<Record<string, number>> = {
  AED: 200,
  AUD: 50,
  BGN: 100,
  BRL: 50,
  CAD: 50,
  CHF: 50,
  CZK: 1500,
  DKK: 250,
  EUR: 50,
  GBP: 30,
  HKD: 400,
  HUF: 17500,
  INR: 50,
  JPY: 50,
  MXN: 1000,
  MYR: 200,
  NOK: 300,
  NZD: 50,
  PLN: 200,
  RON: 200,
  SEK: 300,
  SGD: 50,
  THB: 1000,
  USD: 50,
};

/** Currencies with three decimals: Stripe takes amounts in their minor unit but only in tens. */
const THREE_DECIMAL = new Set(['BHD', 'JOD', 'KWD', 'OMR', 'TND']);

/** Why Stripe would refuse to charge this amount, or null when it accepts it. */
export function stripeAmountRefusal(amountMinor: number, currency: string): string | null {
  const code = currency.toUpperCase();
  const minimum = MINIMUM_MINOR[code] ?? 1;
  if (amountMinor < minimum || amountMinor > STRIPE_MAX_AMOUNT_MINOR) {
    return `The payment provider accepts ${code} totals from ${minimum} to ${STRIPE_MAX_AMOUNT_MINOR} minor units.`;
  }
  if (THREE_DECIMAL.has(code) && amountMinor % 10 !== 0) {
    return `The payment provider accepts ${code} totals in multiples of 10 minor units only.`;
  }
  return null;
}
