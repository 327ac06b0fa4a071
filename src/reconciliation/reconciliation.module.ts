import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { ProviderStatement } from './provider-statement.js';
import { SettlementReconciliation } from './settlement-reconciliation.service.js';
import { SimulatedProviderStatement } from './simulated-provider-statement.js';
import { WorkInFlight } from './work-in-flight.js';
import { StripePaymentModule } from '../payment-stripe/stripe-payment.module.js';
import { StripeProviderStatement } from '../payment-stripe/stripe-provider-statement.js';

/** The ledger's provider clearing account against the provider's statement (settlement reconciliation). */
@Module({
  imports: [PaymentsModule, LedgerModule, StripePaymentModule],
  providers: [
    SettlementReconciliation,
    WorkInFlight,
    SimulatedProviderStatement,
    // PAYMENT_PROVIDER=stripe: Stripe's balance transactions (provided only then), else the simulator's books.
    {
      provide: ProviderStatement,
      inject: [SimulatedProviderStatement, StripeProviderStatement],
      useFactory: (simulator: SimulatedProviderStatement, stripe: StripeProviderStatement | null) => stripe ?? simulator,
    },
  ],
  exports: [SettlementReconciliation],
})
export class ReconciliationModule {}
