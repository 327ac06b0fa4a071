import { Module } from '@nestjs/common';
import { webhooksConfig, type WebhooksConfig } from '../config/config.tokens.js';
import { MongooseModule } from '@nestjs/mongoose';
import { AsyncPaymentsModule } from '../async-payments/async-payments.module.js';
import { RefundsModule } from '../refunds/refunds.module.js';
import { InboxEventRepository } from './inbox-event.repository.js';
import { InboxEventSchema, INBOX_EVENT_MODEL } from './schemas/inbox-event.schema.js';
import { WebhookInbox } from './webhook-inbox.service.js';
import { WebhooksController } from './webhooks.controller.js';
import { WebhookRefusals } from './webhook-door.js';

/** Provider webhooks: the signed endpoint and the inbox that applies each event once (async-payments' AsyncSettlement, refunds' RefundFailure). */
@Module({
  imports: [MongooseModule.forFeature([{ name: INBOX_EVENT_MODEL, schema: InboxEventSchema }]), AsyncPaymentsModule, RefundsModule],
  controllers: [WebhooksController],
  // One refusal budget per source, shared by the door (app.setup.ts, before the body) and the handler (after it).
  providers: [
    InboxEventRepository,
    WebhookInbox,
    {
      provide: WebhookRefusals,
      inject: [webhooksConfig.KEY],
      useFactory: (config: WebhooksConfig) => new WebhookRefusals(config.refusalsPerSourcePerMinute),
    },
  ],
  exports: [WebhookInbox, WebhookRefusals],
})
export class WebhooksModule {}
