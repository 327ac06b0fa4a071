import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { OrdersModule } from '../orders/orders.module.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { WebhookEndpointsModule } from '../webhook-endpoints/webhook-endpoints.module.js';
import { ErasureCacheSweep } from './erasure-cache.sweep.js';
import { ErasureController } from './erasure.controller.js';
import { ErasureRepository } from './erasure.repository.js';
import { ErasureService } from './erasure.service.js';
import { ErasureSchema, ERASURE_MODEL } from './schemas/erasure.schema.js';

@Module({
  imports: [
    MongooseModule.forFeature([{ name: ERASURE_MODEL, schema: ErasureSchema }]),
    OrdersModule,
    OutboxModule,
    WebhookEndpointsModule,
  ],
  controllers: [ErasureController],
  providers: [ErasureRepository, ErasureService, ErasureCacheSweep],
})
export class PrivacyModule {}
