import { Module, type OnModuleInit } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { IdempotencyReaper } from '@idempotent-orders/nest-idempotency';
import { LedgerModule } from '../ledger/ledger.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { RefundFailure } from './refund-failure.js';
import { RefundWorkflow } from './refund-workflow.js';
import { RefundRepository } from './refund.repository.js';
import { RefundsController } from './refunds.controller.js';
import { REFUND_OPERATION, RefundsService } from './refunds.service.js';
import { RefundSchema, REFUND_MODEL } from './schemas/refund.schema.js';

@Module({
  imports: [
    MongooseModule.forFeature([{ name: REFUND_MODEL, schema: RefundSchema }]),
    OrdersModule,
    PaymentsModule,
    LedgerModule,
    OutboxModule,
  ],
  controllers: [RefundsController],
  providers: [RefundRepository, RefundWorkflow, RefundsService, RefundFailure],
  exports: [RefundsService, RefundFailure],
})
export class RefundsModule implements OnModuleInit {
  constructor(
    private readonly reaper: IdempotencyReaper,
    private readonly workflow: RefundWorkflow,
  ) {}

  /** Plugs the refund state machine into the reaper: stale refunds are reconciled with the provider by their key, never refunded. */
  onModuleInit(): void {
    this.reaper.register(REFUND_OPERATION, async (lease) => {
      const refund = await this.workflow.advance(lease, 'reconcile');
      return refund.state === 'succeeded' ? 'completed' : 'abandoned';
    });
  }
}
