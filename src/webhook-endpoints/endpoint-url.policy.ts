import { Inject, Injectable } from '@nestjs/common';
import { outgoingWebhooksConfig, type OutgoingWebhooksConfig } from '../config/config.tokens.js';
import { ipLiteral, refusedAddress, type Resolver } from './address-rules.js';
import { WebhookUrlRefusedError } from './webhook-endpoints.errors.js';
import { WEBHOOK_RESOLVER } from './webhook-sender.js';

/**
 * Whether a URL may be registered. Checked again on every delivery, at
 * connect time (WebhookSender): a name may resolve elsewhere later.
 */
@Injectable()
export class EndpointUrlPolicy {
  constructor(
    @Inject(outgoingWebhooksConfig.KEY) private readonly config: OutgoingWebhooksConfig,
    @Inject(WEBHOOK_RESOLVER) private readonly resolve: Resolver,
  ) {}

  /** Throws WebhookUrlRefusedError with the reason; resolves the host name when it is not an IP address. */
  async check(raw: string): Promise<void> {
    const url = parse(raw);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && !this.config.requireHttps)) {
      throw new WebhookUrlRefusedError(this.config.requireHttps ? 'the scheme must be https' : 'the scheme must be https or http');
    }
    if (url.username || url.password)
      throw new WebhookUrlRefusedError('credentials in the URL are not accepted (they would be stored in clear)');
    if (this.config.allowPrivate) return;
    const literal = ipLiteral(url);
    const addresses = literal ? [literal] : await this.addressesOf(url.hostname);
    const refused = addresses.map(refusedAddress).find((reason) => reason !== null);
    if (refused) throw new WebhookUrlRefusedError(refused);
  }

  private async addressesOf(hostname: string): Promise<string[]> {
    try {
      return (await this.resolve(hostname)).map((resolved) => resolved.address);
    } catch {
      throw new WebhookUrlRefusedError(`${hostname} does not resolve`);
    }
  }
}

function parse(raw: string): URL {
  try {
    return new URL(raw);
  } catch {
    throw new WebhookUrlRefusedError('not an absolute URL');
  }
}
