import { Logger, Module, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { LedgerModule } from '../ledger/ledger.module.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { OrderWorkflow } from './order-workflow.js';
import { OrderRepository } from './order.repository.js';
import { OrdersController } from './orders.controller.js';
import { CREATE_ORDER_OPERATION, OrdersService } from './orders.service.js';
import { OrderSchema, ORDER_MODEL } from './schemas/order.schema.js';

@Module({
  imports: [MongooseModule.forFeature([{ name: ORDER_MODEL, schema: OrderSchema }]), PaymentsModule, LedgerModule, OutboxModule],
  controllers: [OrdersController],
  providers: [OrderRepository, OrderWorkflow, OrdersService],
  exports: [OrdersService, OrderRepository, OrderWorkflow],
})
export class OrdersModule implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger(OrdersModule.name);

  constructor(
    private readonly reaper: IdempotencyReaper,
    private readonly workflow: OrderWorkflow,
    private readonly orders: OrderRepository,
  ) {}

  /** Orders of an earlier release get their money fields, in the background (refunds need them). */
  onApplicationBootstrap(): void {
    this.orders.backfillMoneyFields().then(
      (filled) => filled > 0 && this.logger.log({ msg: 'orders of an earlier release given their money fields', filled }),
      (error: unknown) =>
        this.logger.warn({ msg: 'money fields backfill stopped; it runs again at the next start', error: (error as Error).name }),
    );
  }

  /** Plugs the order state machine into the reaper: stale orders are reconciled with the provider, never charged. */
  onModuleInit(): void {
    this.reaper.register(CREATE_ORDER_OPERATION, async (lease) => {
      const order = await this.workflow.advance(lease, 'reconcile');
      // Saved, authorized (manual capture) or processing (asynchronous, the 202): the create's answer is stored.
      return order.state === 'saved' || order.state === 'authorized' || order.state === 'processing' ? 'completed' : 'abandoned';
    });
  }
}
