import { ConfigurationError, deploymentOf, Environment } from '../config/environment.js';
import type { IdempotencySettings } from '../config/idempotency.config.js';
import { IdempotencyEnvironment } from '../config/idempotency.config.js';
import { MongoEnvironment, mongoSettings, type MongoSettings } from '../config/mongo.config.js';
import { PaymentsEnvironment, paymentsSettings, type PaymentsSettings } from '../config/payments.config.js';
import { ReaperEnvironment, reaperSettings, type ReaperSettings } from '../config/reaper.config.js';
import { stripeConfigSettings, type StripeConfig } from '../config/stripe.config.js';
import { StripeSettingsError } from '../payment-stripe/stripe.settings.js';
import { WebhooksEnvironment, type WebhookSettings } from '../config/webhooks.config.js';

/** What a settlement report reads of the idempotency settings: the reaper's horizon, never the record keys. */
export type ReportIdempotencySettings = Pick<IdempotencySettings, 'lockTimeoutMs' | 'resumeWindowMs'>;
/** What a settlement report reads of the webhook settings: the processing bound, never the secrets. */
export type ReportWebhookSettings = Pick<WebhookSettings, 'processingBoundMs'>;

/** The settings of a read-only settlement report (the reconcile CLI), under the service's namespace names. */
export interface ReportConfiguration {
  mongo: MongoSettings;
  payments: PaymentsSettings;
  reaper: ReaperSettings;
  idempotency: ReportIdempotencySettings;
  webhooks: ReportWebhookSettings;
  stripe: StripeConfig;
}

/**
 * Only what a report reads, each variable checked as the service checks it:
 * the store, the simulator's database, the provider (Stripe's key when
 * PAYMENT_PROVIDER=stripe, for its statement) and the re-check horizon. A
 * report writes nothing and serves no one, so it needs none of the API
 * keys, record keys or webhook secrets the service refuses to start
 * without. Throws ConfigurationError naming every bad variable it reads.
 */
export function reportConfiguration(raw: NodeJS.ProcessEnv): ReportConfiguration {
  const environment = new Environment(raw);
  const { problems } = environment;
  const mongoEnv = environment.read(MongoEnvironment);
  const idempotency = environment.read(IdempotencyEnvironment);
  const webhooks = environment.read(WebhooksEnvironment);
  const deployment = deploymentOf(raw.NODE_ENV || 'development', mongoEnv.MONGODB_URI, environment.isInvalid('MONGODB_URI'));
  const mongo = mongoSettings(mongoEnv, deployment, problems);
  const payments = paymentsSettings(environment.read(PaymentsEnvironment));
  const reaper = reaperSettings(environment.read(ReaperEnvironment));
  let stripe: StripeConfig | null = null;
  try {
    stripe = stripeConfigSettings(raw);
  } catch (error) {
    if (!(error instanceof StripeSettingsError)) throw error;
    problems.push(error.message);
  }
  if (problems.length > 0 || !stripe) throw new ConfigurationError(problems);
  return {
    mongo,
    payments,
    reaper,
    idempotency: { lockTimeoutMs: idempotency.IDEMPOTENCY_LOCK_TIMEOUT_MS, resumeWindowMs: idempotency.IDEMPOTENCY_RESUME_WINDOW_MS },
    webhooks: { processingBoundMs: webhooks.PROCESSING_BOUND_MS },
    stripe,
  };
}
