import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { PaymentGateway } from './payment-gateway.port.js';
import { PaymentRepository } from './payment.repository.js';
import { PaymentsService } from './payments.service.js';
import { PaymentSchema, PAYMENT_MODEL } from './schemas/payment.schema.js';
import { SimulatedPaymentGateway } from './simulated-payment.gateway.js';
import { SimulatedWebhookSender } from './webhook-sender.js';

@Module({
  imports: [MongooseModule.forFeature([{ name: PAYMENT_MODEL, schema: PaymentSchema }])],
  providers: [PaymentRepository, PaymentsService, SimulatedWebhookSender, { provide: PaymentGateway, useClass: SimulatedPaymentGateway }],
  exports: [PaymentsService, PaymentGateway, SimulatedWebhookSender],
})
export class PaymentsModule {}
