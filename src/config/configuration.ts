import { AppEnvironment, appSettings, type AppSettings } from './app.config.js';
import { ConfigurationError, deploymentOf, Environment } from './environment.js';
import { HttpEnvironment, httpSettings, type HttpSettings } from './http.config.js';
import { IdempotencyEnvironment, idempotencySettings, type IdempotencySettings } from './idempotency.config.js';
import { KeysEnvironment, recordKeys } from './keys.config.js';
import { MetricsEnvironment, metricsSettings, type MetricsSettings } from './metrics.config.js';
import { MongoEnvironment, mongoSettings, type MongoSettings } from './mongo.config.js';
import { NatsEnvironment, natsSettings, type NatsSettings } from './nats.config.js';
import { OutboxEnvironment, outboxSettings, type OutboxSettings } from './outbox.config.js';
import { OutgoingWebhooksEnvironment, outgoingWebhooksSettings, type OutgoingWebhooksSettings } from './outgoing-webhooks.config.js';
import { PaymentsEnvironment, paymentsSettings, type PaymentsSettings } from './payments.config.js';
import { ReaperEnvironment, reaperSettings, type ReaperSettings } from './reaper.config.js';
import { RedisEnvironment, redisSettings, type RedisSettings } from './redis.config.js';
import { SecurityEnvironment, securitySettings, type SecuritySettings } from './security.config.js';
import { WebhookDeliveryEnvironment, webhookDeliverySettings, type WebhookDeliverySettings } from './webhook-delivery.config.js';
import { WebhooksEnvironment, webhookSettings, type WebhookSettings } from './webhooks.config.js';

// One door for consumers: the namespaces' types and constants, wherever their file is.
export { FAULT_POINTS, logFormat, type AppSettings, type FaultPoint } from './app.config.js';
export { ConfigurationError } from './environment.js';
export type { HttpSettings } from './http.config.js';
export type { IdempotencySettings } from './idempotency.config.js';
export { keyId, type CipherKey } from './keys.config.js';
export { DEFAULT_METRICS_PORT, type MetricsSettings } from './metrics.config.js';
export { useEmbeddedStore, type MongoSettings } from './mongo.config.js';
export type { NatsSettings } from './nats.config.js';
export type { OutboxSettings } from './outbox.config.js';
export type { OutgoingWebhooksSettings } from './outgoing-webhooks.config.js';
export type { PaymentsSettings } from './payments.config.js';
export type { ReaperSettings } from './reaper.config.js';
export type { RedisSettings } from './redis.config.js';
export {
  API_KEY_SCOPES,
  DEV_API_SECRET,
  DEV_TENANT,
  type ApiKeyEntry,
  type ApiKeyScope,
  type SecuritySettings,
} from './security.config.js';
export type { WebhookDeliverySettings } from './webhook-delivery.config.js';
export { DEV_WEBHOOK_SECRET, type WebhookSettings } from './webhooks.config.js';

export interface Configuration {
  app: AppSettings;
  http: HttpSettings;
  mongo: MongoSettings;
  security: SecuritySettings;
  idempotency: IdempotencySettings;
  reaper: ReaperSettings;
  outbox: OutboxSettings;
  nats: NatsSettings;
  payments: PaymentsSettings;
  redis: RedisSettings;
  metrics: MetricsSettings;
  webhooks: WebhookSettings;
  webhookDelivery: WebhookDeliverySettings;
  outgoingWebhooks: OutgoingWebhooksSettings;
}

/** Every namespace's variables, each validated against its own class: the one list of settings. */
function readEnvironment(environment: Environment) {
  return {
    app: environment.read(AppEnvironment),
    http: environment.read(HttpEnvironment),
    mongo: environment.read(MongoEnvironment),
    security: environment.read(SecurityEnvironment),
    keys: environment.read(KeysEnvironment),
    idempotency: environment.read(IdempotencyEnvironment),
    reaper: environment.read(ReaperEnvironment),
    outbox: environment.read(OutboxEnvironment),
    nats: environment.read(NatsEnvironment),
    payments: environment.read(PaymentsEnvironment),
    webhooks: environment.read(WebhooksEnvironment),
    webhookDelivery: environment.read(WebhookDeliveryEnvironment),
    redis: environment.read(RedisEnvironment),
    metrics: environment.read(MetricsEnvironment),
    outgoingWebhooks: environment.read(OutgoingWebhooksEnvironment),
  };
}

/** The name of every environment variable the service reads (.env.example and the deploy check are held to it). */
export function environmentVariables(): string[] {
  const environment = new Environment({});
  readEnvironment(environment);
  return environment.variables;
}

/** Reads and validates the environment; throws ConfigurationError naming every bad variable. */
export function loadConfiguration(raw: NodeJS.ProcessEnv): Configuration {
  const environment = new Environment(raw);
  const { problems } = environment;
  const env = readEnvironment(environment);
  const deployment = deploymentOf(env.app.NODE_ENV, env.mongo.MONGODB_URI, environment.isInvalid('MONGODB_URI'));

  const mongo = mongoSettings(env.mongo, deployment, problems);
  const http = httpSettings(env.http, problems);
  const security = securitySettings(env.security, deployment, problems);
  const keys = recordKeys(env.keys, deployment, problems);
  const redis = redisSettings(env.redis, env.mongo.MONGODB_DB_NAME, deployment, problems);
  const app = appSettings(env.app, deployment, security.usingDevApiKey, problems);
  const metrics = metricsSettings(env.metrics, deployment, app, problems);
  const idempotency = idempotencySettings(env.idempotency, keys, problems);
  const webhooks = webhookSettings(env.webhooks, deployment, problems);
  const webhookDelivery = webhookDeliverySettings(env.webhookDelivery, webhooks.secrets, problems);
  const outgoingWebhooks = outgoingWebhooksSettings(env.outgoingWebhooks, deployment, problems);
  const nats = natsSettings(env.nats, problems);
  if (problems.length > 0) throw new ConfigurationError(problems);
  const [reaper, outbox, payments] = [reaperSettings(env.reaper), outboxSettings(env.outbox), paymentsSettings(env.payments)];
  return {
    app,
    http,
    mongo,
    security,
    idempotency,
    reaper,
    outbox,
    nats,
    payments,
    redis,
    metrics,
    webhooks,
    webhookDelivery,
    outgoingWebhooks,
  };
}

/** Every problem of an environment, none when it loads: what a deploy check (or a test) asks. */
export function configurationProblems(raw: NodeJS.ProcessEnv): string[] {
  try {
    loadConfiguration(raw);
    return [];
  } catch (error) {
    if (error instanceof ConfigurationError) return error.problems;
    throw error;
  }
}
