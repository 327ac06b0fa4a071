import { Controller, HttpCode, Inject, NotFoundException, Post, Req } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import Stripe from 'stripe';
import { Public } from '../auth/public.decorator.js';
import { ApiProblemResponse, RETRY_AFTER_HEADER } from '../common/api-problem.decorator.js';
import { webhooksConfig, type WebhooksConfig } from '../config/config.tokens.js';
import { SignedRawBody } from '../http/signed-raw-body.js';
import { WebhookReceiptResponse } from '../webhooks/dto/webhook-receipt.response.js';
import { WebhookInbox, type InboxReceipt } from '../webhooks/webhook-inbox.service.js';
import { sourceOf, WebhookRefusals } from '../webhooks/webhook-door.js';
import { DomainError } from '../common/domain-error.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  WebhookPayloadTooLargeError,
  WebhookSignatureInvalidError,
  WebhookTimestampOutOfToleranceError,
} from '../webhooks/webhooks.errors.js';
import { paymentEventOf } from './stripe-event.translator.js';
import { STRIPE_CLIENT, STRIPE_SETTINGS } from './stripe.tokens.js';
import type { StripeSettings } from './stripe.settings.js';

/**
 * Stripe's door into the same inbox as the simulator's events:
 * `Stripe-Signature` verified by the SDK (stripe.webhooks.constructEvent)
 * over the exact bytes received, within the configured tolerance; then the
 * event is translated (stripe-event.translator.ts) and applied once by
 * Stripe's event id. Nothing is written before the signature verifies; the
 * body is never logged.
 */
@ApiTags('webhooks')
@Public()
@Controller({ path: 'webhooks', version: '1' })
export class StripeWebhooksController {
  constructor(
    private readonly inbox: WebhookInbox,
    private readonly refusals: WebhookRefusals,
    private readonly metrics: MetricsService,
    @Inject(STRIPE_CLIENT) private readonly stripe: Stripe | null,
    @Inject(STRIPE_SETTINGS) private readonly settings: StripeSettings | null,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {}

  @Post('stripe')
  @SignedRawBody('stripe')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Stripe events (PAYMENT_PROVIDER=stripe), applied exactly once',
    description:
      'Signed by Stripe (Stripe-Signature, HMAC-SHA256 of `t.body` with the endpoint secret). payment_intent.processing, .succeeded and ' +
      '.payment_failed move orders; refund.failed (and refund.updated / charge.refund.updated with status failed) fails a refund that ' +
      'had succeeded and gives its amount back to the order; every other type is recorded and acknowledged. 2xx: recorded, do not deliver again.',
  })
  @ApiHeader({ name: 'stripe-signature', required: true, description: '`t=<unix seconds>,v1=<hex HMAC-SHA256>`' })
  @ApiOkResponse({ type: WebhookReceiptResponse })
  @ApiProblemResponse(404, '`not_found`: PAYMENT_PROVIDER is not stripe, so there is no such endpoint')
  @ApiProblemResponse(401, '`webhook_signature_invalid` or `webhook_timestamp_out_of_tolerance`: nothing recorded')
  @ApiProblemResponse(413, '`payload_too_large`: the body is over WEBHOOK_BODY_LIMIT_BYTES')
  @ApiProblemResponse(415, '`unsupported_media_type`: send the body as application/json')
  @ApiProblemResponse(503, '`webhook_not_ready` or `store_unavailable`: nothing recorded; Stripe delivers again', RETRY_AFTER_HEADER)
  async receive(@Req() request: FastifyRequest): Promise<InboxReceipt> {
    // Without PAYMENT_PROVIDER=stripe there is no Stripe endpoint: as unknown as any other route, nothing read.
    if (!this.stripe || !this.settings) throw new NotFoundException();
    let event: Stripe.Event;
    try {
      event = this.verified(request, this.stripe, this.settings.webhookSecret);
    } catch (error) {
      // Refusals count against the source's budget, as at the Standard Webhooks door (webhooks/webhook-door.ts).
      if (error instanceof DomainError) {
        this.refusals.refused(sourceOf(request));
        this.metrics.webhookRefused.inc({ code: error.code });
      }
      throw error;
    }
    return this.inbox.receive(paymentEventOf(event));
  }

  /** Size, the one Stripe-Signature header, then the SDK's check over the exact bytes received (app.setup.ts hands signed routes a Buffer). */
  private verified(request: FastifyRequest, stripe: Stripe, secret: string): Stripe.Event {
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    if (raw.length > this.config.bodyLimitBytes) throw new WebhookPayloadTooLargeError(this.config.bodyLimitBytes);
    const signatures = request.raw.headersDistinct['stripe-signature'] ?? [];
    if (signatures.length !== 1) throw new WebhookSignatureInvalidError('Exactly one Stripe-Signature header is required.');
    try {
      return stripe.webhooks.constructEvent(raw, signatures[0], secret, this.config.toleranceSeconds);
    } catch (error) {
      if (!(error instanceof Stripe.errors.StripeSignatureVerificationError)) throw error;
      if (/tolerance/i.test(error.message)) throw new WebhookTimestampOutOfToleranceError(this.config.toleranceSeconds);
      throw new WebhookSignatureInvalidError();
    }
  }
}
