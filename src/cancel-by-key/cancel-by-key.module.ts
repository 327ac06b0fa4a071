import { Module } from '@nestjs/common';
import { AsyncPaymentsModule } from '../async-payments/async-payments.module.js';
import { CaptureVoidModule } from '../capture-void/capture-void.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { OrderCancellation } from './order-cancellation.js';

/** Cancel by key of orders.create: the undo of what a key made, composing the operations it undoes. */
@Module({
  imports: [OrdersModule, CaptureVoidModule, AsyncPaymentsModule],
  providers: [OrderCancellation],
})
export class CancelByKeyModule {}
