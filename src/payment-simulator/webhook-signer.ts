import { Webhook } from 'standardwebhooks';

/** The three Standard Webhooks headers of one signed delivery. */
export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The provider's side of Standard Webhooks (the same `standardwebhooks`
 * library the service verifies with): one `v1,` signature per secret, space
 * separated - during a rotation the provider signs with the new secret and
 * the old one, so receivers on either verify.
 */
export class WebhookSigner {
  private readonly keys: Webhook[];

  constructor(secrets: readonly string[]) {
    this.keys = secrets.map((secret) => new Webhook(secret));
  }

  sign(id: string, body: string, at: Date): SignedHeaders {
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': this.keys.map((key) => key.sign(id, at, body)).join(' '),
    };
  }
}
