/** The Stripe adapter's settings (PAYMENT_PROVIDER=stripe), parsed and checked once at boot. */
export interface StripeSettings {
  /** sk_test_... or sk_live_...; never logged. */
  secretKey: string;
  /** whsec_...: the Stripe-Signature secret of the webhook endpoint; never logged. */
  webhookSecret: string;
  /** The SDK's own retries of one call (see STRIPE_MAX_NETWORK_RETRIES in docs/providers/stripe.md). */
  maxNetworkRetries: number;
  /** Per-call timeout of the SDK, milliseconds. */
  timeoutMs: number;
  /** Retry-After (seconds) the service answers when Stripe is unavailable. */
  retryAfterSeconds: number;
  /** Only for tests and local fakes: where the SDK sends its requests (host, port, protocol). */
  apiBase: { host: string; port: number; protocol: 'http' | 'https' } | null;
}

export class StripeSettingsError extends Error {
  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`);
    this.name = 'StripeSettingsError';
  }
}

/**
 * Fail closed: a live key outside production, a test key in production, a
 * missing secret or a malformed value stops the boot, naming the variable -
 * never its value (secrets are not echoed).
 */
export function parseStripeSettings(env: Record<string, string | undefined>, production: boolean): StripeSettings {
  const secretKey = env.STRIPE_SECRET_KEY ?? '';
  if (!/^sk_(test|live)_[A-Za-z0-9]{8,247}$/.test(secretKey)) {
    throw new StripeSettingsError('STRIPE_SECRET_KEY', 'required with PAYMENT_PROVIDER=stripe, a secret key sk_test_... or sk_live_...');
  }
  const live = secretKey.startsWith('sk_live_');
  if (live && !production) throw new StripeSettingsError('STRIPE_SECRET_KEY', 'a live key (sk_live_) is refused outside production');
  if (!live && production) throw new StripeSettingsError('STRIPE_SECRET_KEY', 'a test key (sk_test_) is refused in production');
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET ?? '';
  if (!/^whsec_[A-Za-z0-9+/=_-]{8,200}$/.test(webhookSecret)) {
    throw new StripeSettingsError('STRIPE_WEBHOOK_SECRET', 'required with PAYMENT_PROVIDER=stripe, the endpoint secret whsec_...');
  }
  const apiBase = parseApiBase(env.STRIPE_API_BASE, production);
  return {
    secretKey,
    webhookSecret,
    maxNetworkRetries: integer(env, 'STRIPE_MAX_NETWORK_RETRIES', 1, 0, 5),
    timeoutMs: integer(env, 'STRIPE_TIMEOUT_MS', 10_000, 100, 80_000),
    retryAfterSeconds: integer(env, 'STRIPE_RETRY_AFTER_SECONDS', 2, 1, 3600),
    apiBase,
  };
}

/** STRIPE_API_BASE=http://127.0.0.1:12111 points the SDK at a local fake; refused in production (it would send the live key elsewhere). */
function parseApiBase(value: string | undefined, production: boolean): StripeSettings['apiBase'] {
  if (!value) return null;
  if (production) throw new StripeSettingsError('STRIPE_API_BASE', 'only for tests and local fakes; refused in production');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new StripeSettingsError('STRIPE_API_BASE', 'must be a URL such as http://127.0.0.1:12111');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StripeSettingsError('STRIPE_API_BASE', 'must be http or https');
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { host: url.hostname, port: Number(url.port || (protocol === 'http' ? 80 : 443)), protocol };
}

function integer(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new StripeSettingsError(name, `must be an integer from ${min} to ${max}`);
  }
  return Number(raw);
}
