import { registerAs, type ConfigType } from '@nestjs/config';
import { loadConfiguration } from './configuration.js';
import { stripeConfig } from './stripe.config.js';

/*
 * Namespaced, typed configuration. Each namespace re-reads the same validated
 * environment (validation is cheap and happens at boot), so a consumer
 * injects only the slice it needs:
 *   constructor(@Inject(idempotencyConfig.KEY) cfg: ConfigType<typeof idempotencyConfig>)
 */
export const appConfig = registerAs('app', () => loadConfiguration(process.env).app);
export const httpConfig = registerAs('http', () => loadConfiguration(process.env).http);
export const mongoConfig = registerAs('mongo', () => loadConfiguration(process.env).mongo);
export const securityConfig = registerAs('security', () => loadConfiguration(process.env).security);
export const idempotencyConfig = registerAs('idempotency', () => loadConfiguration(process.env).idempotency);
export const reaperConfig = registerAs('reaper', () => loadConfiguration(process.env).reaper);
export const outboxConfig = registerAs('outbox', () => loadConfiguration(process.env).outbox);
export const natsConfig = registerAs('nats', () => loadConfiguration(process.env).nats);
export const paymentsConfig = registerAs('payments', () => loadConfiguration(process.env).payments);
export const redisConfig = registerAs('redis', () => loadConfiguration(process.env).redis);
export const metricsConfig = registerAs('metrics', () => loadConfiguration(process.env).metrics);
export const webhooksConfig = registerAs('webhooks', () => loadConfiguration(process.env).webhooks);
export const webhookDeliveryConfig = registerAs('webhookDelivery', () => loadConfiguration(process.env).webhookDelivery);
export const outgoingWebhooksConfig = registerAs('outgoingWebhooks', () => loadConfiguration(process.env).outgoingWebhooks);

export const allConfig = [
  appConfig,
  httpConfig,
  mongoConfig,
  securityConfig,
  idempotencyConfig,
  reaperConfig,
  outboxConfig,
  natsConfig,
  paymentsConfig,
  redisConfig,
  metricsConfig,
  webhooksConfig,
  webhookDeliveryConfig,
  outgoingWebhooksConfig,
  stripeConfig,
];

export type AppConfig = ConfigType<typeof appConfig>;
export type HttpConfig = ConfigType<typeof httpConfig>;
export type MongoConfig = ConfigType<typeof mongoConfig>;
export type SecurityConfig = ConfigType<typeof securityConfig>;
export type IdempotencyConfig = ConfigType<typeof idempotencyConfig>;
export type ReaperConfig = ConfigType<typeof reaperConfig>;
export type OutboxConfig = ConfigType<typeof outboxConfig>;
export type NatsConfig = ConfigType<typeof natsConfig>;
export type PaymentsConfig = ConfigType<typeof paymentsConfig>;
export type RedisConfig = ConfigType<typeof redisConfig>;
export type MetricsConfig = ConfigType<typeof metricsConfig>;
export type WebhooksConfig = ConfigType<typeof webhooksConfig>;
export type WebhookDeliveryConfig = ConfigType<typeof webhookDeliveryConfig>;
export type OutgoingWebhooksConfig = ConfigType<typeof outgoingWebhooksConfig>;
