import { Module, type OnModuleInit } from '@nestjs/common';
import { IdempotencyReaper, type ReconcileDecision } from '@idempotent-orders/nest-idempotency';
import { LedgerModule } from '../ledger/ledger.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { OutboxModule } from '../outbox/outbox.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { AuthorizationExpirySweep } from './authorization-expiry.sweep.js';
import { CAPTURE_ORDER_OPERATION, VOID_ORDER_OPERATION } from './capture-void.js';
import { CaptureVoidController } from './capture-void.controller.js';
import { CaptureVoidService } from './capture-void.service.js';
import { CaptureVoidWorkflow } from './capture-void-workflow.js';

/** Capture and void of a manual-capture order (POST /v1/orders/:id/capture|void), and the sweep of lapsed authorizations. */
@Module({
  imports: [OrdersModule, PaymentsModule, LedgerModule, OutboxModule],
  controllers: [CaptureVoidController],
  providers: [CaptureVoidWorkflow, CaptureVoidService, AuthorizationExpirySweep],
  exports: [CaptureVoidService],
})
export class CaptureVoidModule implements OnModuleInit {
  constructor(
    private readonly reaper: IdempotencyReaper,
    private readonly workflow: CaptureVoidWorkflow,
  ) {}

  /** Plugs capture and void into the reaper: a stale one is reconciled with the provider by its key, never captured or voided. */
  onModuleInit(): void {
    for (const operation of [CAPTURE_ORDER_OPERATION, VOID_ORDER_OPERATION]) {
      this.reaper.register(
        operation,
        async (lease) => (await this.workflow.advance(lease, 'reconcile')).decision satisfies ReconcileDecision,
      );
    }
  }
}
