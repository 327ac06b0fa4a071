import { Logger, Module, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { lookup } from 'node:dns/promises';
import { IdempotencyReaper, IdempotentMessages, SingleTransactionWorks } from '@idempotent-orders/nest-idempotency';
import { OutboxModule } from '../outbox/outbox.module.js';
import type { Resolver } from './address-rules.js';
import { DeliveryWorkflow } from './delivery-workflow.js';
import { EndpointSecrets } from './endpoint-secrets.js';
import { EndpointUrlPolicy } from './endpoint-url.policy.js';
import { WebhookDeliverySchema, WEBHOOK_DELIVERY_MODEL } from './schemas/webhook-delivery.schema.js';
import { WebhookEndpointTenantSchema, WEBHOOK_ENDPOINT_TENANT_MODEL } from './schemas/webhook-endpoint-tenant.schema.js';
import { WebhookEndpointSchema, WEBHOOK_ENDPOINT_MODEL } from './schemas/webhook-endpoint.schema.js';
import { WebhookSubjectSchema, WEBHOOK_SUBJECT_MODEL } from './schemas/webhook-subject.schema.js';
import { WebhookDeliveryRepository } from './webhook-delivery.repository.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookEndpointRepository } from './webhook-endpoint.repository.js';
import { WebhookEndpointsController } from './webhook-endpoints.controller.js';
import { KEYED_OPERATIONS, WebhookEndpointsService } from './webhook-endpoints.service.js';
import { WEBHOOK_RESOLVER, WebhookSender } from './webhook-sender.js';
import { INBOX_RETENTION_SECONDS, WebhookSubjectRepository } from './webhook-subject.repository.js';

const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/**
 * Outgoing webhooks: the merchants' endpoints (admin scope), the stream's
 * consumer that records one delivery per endpoint and event, and the
 * workflow that sends them, signed, with retries.
 */
@Module({
  imports: [
    MongooseModule.forFeature([
      { name: WEBHOOK_ENDPOINT_MODEL, schema: WebhookEndpointSchema },
      { name: WEBHOOK_ENDPOINT_TENANT_MODEL, schema: WebhookEndpointTenantSchema },
      { name: WEBHOOK_DELIVERY_MODEL, schema: WebhookDeliverySchema },
      { name: WEBHOOK_SUBJECT_MODEL, schema: WebhookSubjectSchema },
    ]),
    OutboxModule,
  ],
  controllers: [WebhookEndpointsController],
  providers: [
    WebhookEndpointRepository,
    WebhookDeliveryRepository,
    WebhookSubjectRepository,
    EndpointSecrets,
    EndpointUrlPolicy,
    WebhookSender,
    DeliveryWorkflow,
    WebhookDispatcher,
    WebhookEndpointsService,
    IdempotentMessages.provider({ retentionSeconds: INBOX_RETENTION_SECONDS }),
    { provide: WEBHOOK_RESOLVER, useValue: systemResolver },
  ],
  exports: [DeliveryWorkflow, WebhookDispatcher, WebhookEndpointsService],
})
export class WebhookEndpointsModule implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('WebhookEndpoints');

  constructor(
    private readonly reaper: IdempotencyReaper,
    private readonly single: SingleTransactionWorks,
    private readonly service: WebhookEndpointsService,
  ) {}

  /** A stale keyed POST committed nothing but its claim: the reaper ends it failed and a retry runs it afresh. */
  onModuleInit(): void {
    for (const operation of KEYED_OPERATIONS) this.reaper.register(operation, (lease) => this.single.abandon(lease));
  }

  /** Secrets sealed under a retired encryption key move to the current one, in the background (boot does not wait). */
  onApplicationBootstrap(): void {
    this.service
      .resealSecrets()
      .catch((error: unknown) => this.logger.warn({ msg: 'webhook secrets not resealed yet', error: String(error) }));
  }
}
