import 'reflect-metadata';
import { IsInt, IsNumber, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { parseWebhookSecrets } from './webhooks.config.js';

/** The simulated provider's webhook deliveries: target URL (unset: no deliveries), then how a real provider misbehaves. */
export class WebhookDeliveryEnvironment {
  // The simulated provider's webhook deliveries: target URL (unset: no deliveries), then how a real provider misbehaves.
  @IsOptional()
  @Matches(/^https?:\/\/\S+$/, { message: 'must be an http:// or https:// URL' })
  PAYMENT_SIMULATOR_WEBHOOK_URL?: string;

  // Secrets the simulator signs with (every one, one signature each); default WEBHOOK_SECRETS.
  @IsOptional()
  @IsString()
  PAYMENT_SIMULATOR_WEBHOOK_SECRETS?: string;

  @IsInt()
  @Min(0)
  @Max(600000)
  PAYMENT_SIMULATOR_WEBHOOK_DELAY_MS: number = 50;

  // Extra random delay per delivery, up to this: deliveries of different events overtake one another.
  @IsInt()
  @Min(0)
  @Max(600000)
  PAYMENT_SIMULATOR_WEBHOOK_JITTER_MS: number = 0;

  @IsNumber()
  @Min(0)
  @Max(1)
  PAYMENT_SIMULATOR_WEBHOOK_DUPLICATE_RATE: number = 0;

  @IsNumber()
  @Min(0)
  @Max(1)
  PAYMENT_SIMULATOR_WEBHOOK_LOSS_RATE: number = 0;

  @IsInt()
  @Min(1)
  @Max(100)
  PAYMENT_SIMULATOR_WEBHOOK_MAX_ATTEMPTS: number = 8;

  @IsInt()
  @Min(1)
  @Max(600000)
  PAYMENT_SIMULATOR_WEBHOOK_BACKOFF_MS: number = 200;
}

/** How the simulated provider delivers its webhooks: at least once, late, twice, out of order, or never. */
export interface WebhookDeliverySettings {
  /** Unset: the simulator sends nothing. */
  url?: string;
  secrets: string[];
  delayMs: number;
  jitterMs: number;
  duplicateRate: number;
  lossRate: number;
  maxAttempts: number;
  backoffMs: number;
}

/** `webhookSecrets`: the secrets WEBHOOK_SECRETS gave the receiving side, which the simulator signs with by default. */
export function webhookDeliverySettings(
  env: WebhookDeliveryEnvironment,
  webhookSecrets: string[],
  problems: string[],
): WebhookDeliverySettings {
  const secrets = env.PAYMENT_SIMULATOR_WEBHOOK_SECRETS
    ? parseWebhookSecrets('PAYMENT_SIMULATOR_WEBHOOK_SECRETS', env.PAYMENT_SIMULATOR_WEBHOOK_SECRETS, undefined, problems).secrets
    : webhookSecrets;
  return {
    url: env.PAYMENT_SIMULATOR_WEBHOOK_URL,
    secrets,
    delayMs: env.PAYMENT_SIMULATOR_WEBHOOK_DELAY_MS,
    jitterMs: env.PAYMENT_SIMULATOR_WEBHOOK_JITTER_MS,
    duplicateRate: env.PAYMENT_SIMULATOR_WEBHOOK_DUPLICATE_RATE,
    lossRate: env.PAYMENT_SIMULATOR_WEBHOOK_LOSS_RATE,
    maxAttempts: env.PAYMENT_SIMULATOR_WEBHOOK_MAX_ATTEMPTS,
    backoffMs: env.PAYMENT_SIMULATOR_WEBHOOK_BACKOFF_MS,
  };
}
