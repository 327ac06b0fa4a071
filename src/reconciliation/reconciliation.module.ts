import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { SettlementReconciliation } from './settlement-reconciliation.service.js';
import { WorkInFlight } from './work-in-flight.js';

/**
 * The ledger's provider clearing account against the provider's statement
 * (settlement reconciliation); the ProviderStatement port is bound by the
 * composition root (PaymentSimulatorModule: the simulator's books, or
 * Stripe's balance transactions).
 */
@Module({
  imports: [LedgerModule],
  providers: [SettlementReconciliation, WorkInFlight],
  exports: [SettlementReconciliation],
})
export class ReconciliationModule {}
