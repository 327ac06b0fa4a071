import 'reflect-metadata';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import type { Deployment } from './environment.js';

/** Provider webhooks we receive, and the bound on how long an order may stay `processing`. */
export class WebhooksEnvironment {
  // Secrets that verify provider webhooks (Standard Webhooks `whsec_<base64>`), comma separated: the current one and any
  // still in rotation. Unset: the dev secret, only where the dev tenant is allowed.
  @IsOptional()
  @IsString()
  WEBHOOK_SECRETS?: string;

  // How far a webhook-timestamp may be from now; the library refuses past 5 minutes whatever this says.
  @IsInt()
  @Min(1)
  @Max(300)
  WEBHOOK_TOLERANCE_SECONDS: number = 300;

  @IsInt()
  @Min(256)
  @Max(1048576)
  WEBHOOK_BODY_LIMIT_BYTES: number = 65536;

  // Refused webhook deliveries one source (client IP, see TRUST_PROXY) may cause per minute before it is
  // refused on sight with 429, its body never read; valid deliveries never count. 0 = no limit.
  @IsInt()
  @Min(0)
  WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE: number = 60;

  // No order stays `processing` longer than this: past it the provider is asked by charge key (and a charge still
  // processing is canceled there), whether or not a webhook ever arrived.
  @IsInt()
  @Min(1000)
  @Max(604800000)
  PROCESSING_BOUND_MS: number = 900000;

  // A bank transfer the provider cannot cancel while processing: waited for this long (days) before it is alerted on.
  @IsInt()
  @Min(1000)
  @Max(2592000000)
  PROCESSING_BOUND_BANK_TRANSFER_MS: number = 432000000;

  // How often the processing reconciliation looks for orders past the bound.
  @IsInt()
  @Min(100)
  @Max(3600000)
  PROCESSING_RECONCILE_INTERVAL_MS: number = 30000;
}

/** Provider webhooks (POST /v1/webhooks/payments) and the bound on `processing` orders. */
export interface WebhookSettings {
  /** Every secret that verifies (Standard Webhooks `whsec_<base64>`): the current one and those still in rotation; none = every delivery refused. */
  secrets: string[];
  usingDevSecret: boolean;
  toleranceSeconds: number;
  bodyLimitBytes: number;
  refusalsPerSourcePerMinute: number;
  processingBoundMs: number;
  /** Per method, for a charge the provider cannot cancel while processing (AsyncChargeResult `still_processing`). */
  processingBoundBankTransferMs: number;
  reconcileIntervalMs: number;
}

/** Documented in README: verifies (and the simulator signs) webhooks where the dev tenant is allowed. */
export const DEV_WEBHOOK_SECRET = `whsec_${Buffer.alloc(24, 'dev-only-webhook-secret').toString('base64')}`;

export function webhookSettings(env: WebhooksEnvironment, deployment: Deployment, problems: string[]): WebhookSettings {
  const secrets = parseWebhookSecrets('WEBHOOK_SECRETS', env.WEBHOOK_SECRETS, deployment.realStore, problems);
  return {
    secrets: secrets.secrets,
    usingDevSecret: secrets.dev,
    toleranceSeconds: env.WEBHOOK_TOLERANCE_SECONDS,
    bodyLimitBytes: env.WEBHOOK_BODY_LIMIT_BYTES,
    refusalsPerSourcePerMinute: env.WEBHOOK_REFUSALS_PER_SOURCE_PER_MINUTE,
    processingBoundMs: env.PROCESSING_BOUND_MS,
    processingBoundBankTransferMs: env.PROCESSING_BOUND_BANK_TRANSFER_MS,
    reconcileIntervalMs: env.PROCESSING_RECONCILE_INTERVAL_MS,
  };
}

export /**
 * WEBHOOK_SECRETS: comma-separated Standard Webhooks secrets (`whsec_` + base64 of 24 to 64 bytes), the newest first.
 * Unset: the dev secret where dev defaults are allowed (`realStore` undefined); with a real store none - the
 * webhook endpoint then refuses every delivery (401) until secrets are set, and deployments without
 * asynchronous payments need not configure any.
 */
function parseWebhookSecrets(name: string, value: string | undefined, realStore: string | undefined, problems: string[]) {
  if (!value) return realStore ? { secrets: [], dev: false } : { secrets: [DEV_WEBHOOK_SECRET], dev: true };
  const secrets = value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  for (const secret of secrets) {
    const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : '';
    const bytes = Buffer.from(encoded, 'base64');
    if (bytes.length < 24 || bytes.length > 64 || bytes.toString('base64') !== encoded) {
      problems.push(`${name}: each secret must be whsec_ followed by 24 to 64 bytes in base64 (whsec_$(openssl rand -base64 32))`);
      return { secrets: [DEV_WEBHOOK_SECRET], dev: true };
    }
    if (realStore && secret === DEV_WEBHOOK_SECRET) {
      problems.push(`${name}: the published dev secret is refused when ${realStore}`);
      return { secrets: [DEV_WEBHOOK_SECRET], dev: true };
    }
  }
  if (secrets.length === 0) problems.push(`${name}: no secret found`);
  return { secrets, dev: false };
}
