import { Module } from '@nestjs/common';
import { CaptureVoidModule } from '../capture-void/capture-void.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { OrderCancellation } from './order-cancellation.js';

/** Cancel by key of orders.create: the undo of what a key made, composing the operations it undoes. */
@Module({
  imports: [OrdersModule, CaptureVoidModule],
  providers: [OrderCancellation],
})
export class CancelByKeyModule {}
