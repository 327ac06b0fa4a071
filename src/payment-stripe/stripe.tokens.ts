/** DI tokens of the Stripe adapter's module (the SDK client and the parsed settings). */
export const STRIPE_CLIENT = Symbol('STRIPE_CLIENT');
export const STRIPE_SETTINGS = Symbol('STRIPE_SETTINGS');
