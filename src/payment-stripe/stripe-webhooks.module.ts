import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { StripePaymentModule } from './stripe-payment.module.js';
import { StripeWebhooksController } from './stripe-webhooks.controller.js';

/**
 * POST /v1/webhooks/stripe into the shared inbox. Its own module: the inbox
 * sits above orders, which sit above the gateway this adapter provides, so
 * the door cannot live in the adapter's module without a cycle.
 */
@Module({
  imports: [StripePaymentModule, WebhooksModule],
  controllers: [StripeWebhooksController],
})
export class StripeWebhooksModule {}
