import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { IdempotencyModule } from '../idempotency/idempotency.module.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { OrderWorkflow } from './order-workflow.js';
import { OrderRepository } from './order.repository.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';
import { OrderSchema, ORDER_MODEL } from './schemas/order.schema.js';

@Module({
  imports: [
    MongooseModule.forFeature([{ name: ORDER_MODEL, schema: OrderSchema }]),
    IdempotencyModule,
    PaymentsModule,
    LedgerModule,
    OutboxModule,
  ],
  controllers: [OrdersController],
  providers: [OrderRepository, OrderWorkflow, OrdersService],
  exports: [OrderWorkflow],
})
export class OrdersModule {}
