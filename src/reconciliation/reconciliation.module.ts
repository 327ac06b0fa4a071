import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { ProcessingReconciler } from './processing-reconciler.js';
import { ProviderStatement } from './provider-statement.js';
import { SettlementReconciliation } from './settlement-reconciliation.service.js';
import { SimulatedProviderStatement } from './simulated-provider-statement.js';
import { WorkInFlight } from './work-in-flight.js';

/** The checks against the provider: no order `processing` past its bound, and the ledger's clearing account = the provider's statement. */
@Module({
  imports: [OrdersModule, PaymentsModule, LedgerModule],
  providers: [
    ProcessingReconciler,
    SettlementReconciliation,
    WorkInFlight,
    { provide: ProviderStatement, useClass: SimulatedProviderStatement },
  ],
  exports: [ProcessingReconciler, SettlementReconciliation],
})
export class ReconciliationModule {}
