import { Global, Module, type Provider } from '@nestjs/common';
import { StripePaymentModule } from '../payment-stripe/stripe-payment.module.js';
import { StripePaymentGateway } from '../payment-stripe/stripe-payment.gateway.js';
import { StripeProviderStatement } from '../payment-stripe/stripe-provider-statement.js';
import { PaymentGateway } from '../payments/payment-gateway.port.js';
import { ProviderStatement } from '../payments/provider-statement.port.js';
import { SimulatedPaymentGateway } from './simulated-payment.gateway.js';
import { SimulatedProviderStatement } from './simulated-provider-statement.js';
import { SimulatedWebhookSender } from './webhook-sender.js';

/** The provider's statement: the simulator's books, or Stripe's balance transactions (PAYMENT_PROVIDER=stripe). */
const STATEMENT: Provider = {
  provide: ProviderStatement,
  inject: [SimulatedProviderStatement, StripeProviderStatement],
  useFactory: (simulator: SimulatedProviderStatement, stripe: StripeProviderStatement | null) => stripe ?? simulator,
};

/**
 * The statement alone, for a read-only report (the reconcile CLI): no
 * gateway, no webhook sender, so none of their settings or secrets.
 */
@Global()
@Module({
  imports: [StripePaymentModule],
  providers: [SimulatedProviderStatement, STATEMENT],
  exports: [ProviderStatement],
})
export class ProviderStatementModule {}

/**
 * The provider's adapters bound to our ports (PaymentGateway,
 * ProviderStatement), once, by the composition roots - AppModule and the
 * reconcile CLI (ProviderStatementModule only): the simulator by default, Stripe when
 * PAYMENT_PROVIDER=stripe (StripePaymentModule provides its adapters only
 * then, null otherwise). src/payments holds the ports and never imports
 * an adapter.
 */
@Global()
@Module({
  imports: [StripePaymentModule, ProviderStatementModule],
  providers: [
    SimulatedWebhookSender,
    SimulatedPaymentGateway,
    {
      provide: PaymentGateway,
      inject: [SimulatedPaymentGateway, StripePaymentGateway],
      useFactory: (simulator: SimulatedPaymentGateway, stripe: StripePaymentGateway | null) => stripe ?? simulator,
    },
  ],
  exports: [PaymentGateway, SimulatedWebhookSender],
})
export class PaymentSimulatorModule {}
