import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { AsyncSettlement } from './async-settlement.js';
import { ProcessingReconciler } from './processing-reconciler.js';

/**
 * Asynchronous payments: an order `processing` (the 202) settled by the
 * same AsyncSettlement whoever asks - a webhook (src/webhooks), the
 * processing bound (ProcessingReconciler) or a cancel (src/cancel-by-key).
 */
@Module({
  imports: [OrdersModule, PaymentsModule, LedgerModule, OutboxModule],
  providers: [AsyncSettlement, ProcessingReconciler],
  exports: [AsyncSettlement, ProcessingReconciler],
})
export class AsyncPaymentsModule {}
