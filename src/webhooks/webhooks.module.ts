import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { OrdersModule } from '../orders/orders.module.js';
import { InboxEventRepository } from './inbox-event.repository.js';
import { InboxEventSchema, INBOX_EVENT_MODEL } from './schemas/inbox-event.schema.js';
import { WebhookInbox } from './webhook-inbox.service.js';
import { WebhooksController } from './webhooks.controller.js';

/** Provider webhooks: the signed endpoint and the inbox that applies each event once (through orders' AsyncSettlement). */
@Module({
  imports: [MongooseModule.forFeature([{ name: INBOX_EVENT_MODEL, schema: InboxEventSchema }]), OrdersModule],
  controllers: [WebhooksController],
  providers: [InboxEventRepository, WebhookInbox],
  exports: [WebhookInbox],
})
export class WebhooksModule {}
