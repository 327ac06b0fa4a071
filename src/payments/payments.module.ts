import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { PaymentGateway } from './payment-gateway.port.js';
import { PaymentRepository } from './payment.repository.js';
import { PaymentsService } from './payments.service.js';
import { PaymentSchema, PAYMENT_MODEL } from './schemas/payment.schema.js';
import { SimulatedPaymentGateway } from './simulated-payment.gateway.js';
import { SimulatedWebhookSender } from './webhook-sender.js';
import { StripePaymentModule } from '../payment-stripe/stripe-payment.module.js';
import { StripePaymentGateway } from '../payment-stripe/stripe-payment.gateway.js';

@Module({
  imports: [MongooseModule.forFeature([{ name: PAYMENT_MODEL, schema: PaymentSchema }]), StripePaymentModule],
  providers: [
    PaymentRepository,
    PaymentsService,
    SimulatedWebhookSender,
    SimulatedPaymentGateway,
    // The composition root of the port: PAYMENT_PROVIDER=stripe binds the Stripe adapter (provided only then), else the simulator.
    {
      provide: PaymentGateway,
      inject: [SimulatedPaymentGateway, StripePaymentGateway],
      useFactory: (simulator: SimulatedPaymentGateway, stripe: StripePaymentGateway | null) => stripe ?? simulator,
    },
  ],
  exports: [PaymentsService, PaymentGateway, SimulatedWebhookSender],
})
export class PaymentsModule {}
