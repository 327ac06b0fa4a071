import { Module } from '@nestjs/common';
import { AsyncPaymentsModule } from '../async-payments/async-payments.module.js';
import { CaptureVoidModule } from '../capture-void/capture-void.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { RefundsModule } from '../refunds/refunds.module.js';
import { OrderCancellation } from './order-cancellation.js';

/**
 * Cancel by key of orders.create: the undo of what a key made - fail it,
 * void it or refund it - above the operations it composes (plain imports:
 * it sits above capture-void, refunds and async-payments, which never
 * import it). Only AppModule imports this module.
 */
@Module({
  imports: [OrdersModule, CaptureVoidModule, RefundsModule, AsyncPaymentsModule],
  providers: [OrderCancellation],
})
export class CancelByKeyModule {}
