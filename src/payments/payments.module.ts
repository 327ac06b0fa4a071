import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { PaymentRepository } from './payment.repository.js';
import { PaymentsService } from './payments.service.js';
import { PaymentSchema, PAYMENT_MODEL } from './schemas/payment.schema.js';

/**
 * Our payment records. The ports (PaymentGateway, ProviderStatement) are
 * bound to an adapter by the composition roots (src/payment-simulator's
 * PaymentSimulatorModule), never here.
 */
@Module({
  imports: [MongooseModule.forFeature([{ name: PAYMENT_MODEL, schema: PaymentSchema }])],
  providers: [PaymentRepository, PaymentsService],
  exports: [PaymentsService],
})
export class PaymentsModule {}
