import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { WebhookSignatureInvalidError, WebhookTimestampOutOfToleranceError } from './webhooks.errors.js';

export interface WebhookHeaders {
  'webhook-id'?: string;
  'webhook-timestamp'?: string;
  'webhook-signature'?: string;
}

/** What the signature vouches for besides the body. */
export interface VerifiedDelivery {
  /** webhook-id: the event's id, the same on every retry of it (the inbox key). */
  id: string;
  /** webhook-timestamp: when this delivery attempt was signed. */
  signedAt: Date;
}

const WEBHOOK_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const TIMESTAMP = /^\d{1,12}$/;

/**
 * Standard Webhooks verification (HMAC-SHA256 over `id.timestamp.body`)
 * through the `standardwebhooks` library, with every secret still in
 * rotation: a delivery verifies when any of its `v1,` signatures was made
 * with any of them. The timestamp is checked here first against the
 * configured tolerance (the library's own 5 minutes stays the outer bound),
 * so a stale delivery gets its own code. With no secret configured every
 * delivery is refused. The body is the exact text received; it is never
 * logged or echoed.
 */
export class WebhookVerifier {
  private readonly keys: Webhook[];

  /** Time is this host's (Date.now), as the library's own check uses: one clock for both bounds. */
  constructor(
    secrets: readonly string[],
    private readonly toleranceSeconds: number,
  ) {
    this.keys = secrets.map((secret) => new Webhook(secret));
  }

  verify(rawBody: string, headers: WebhookHeaders): VerifiedDelivery {
    const id = single(headers['webhook-id']);
    const timestamp = single(headers['webhook-timestamp']);
    const signature = single(headers['webhook-signature']);
    if (!id || !timestamp || !signature) {
      throw new WebhookSignatureInvalidError('webhook-id, webhook-timestamp and webhook-signature are all required.');
    }
    if (!WEBHOOK_ID.test(id)) throw new WebhookSignatureInvalidError('The webhook-id is not a valid id.');
    if (!TIMESTAMP.test(timestamp)) throw new WebhookSignatureInvalidError('The webhook-timestamp is not a Unix time in seconds.');
    const signedAt = new Date(Number(timestamp) * 1000);
    if (Math.abs(Date.now() - signedAt.getTime()) > this.toleranceSeconds * 1000) {
      throw new WebhookTimestampOutOfToleranceError(this.toleranceSeconds);
    }
    const given = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature };
    for (const key of this.keys) {
      try {
        key.verify(rawBody, given, { jsonParse: false });
        return { id, signedAt };
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error;
        if (/timestamp too (old|new)/i.test(error.message)) throw new WebhookTimestampOutOfToleranceError(this.toleranceSeconds);
      }
    }
    throw new WebhookSignatureInvalidError();
  }
}

/** A header sent twice arrives as an array: that is not one signature, so it verifies nothing. */
function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
