import { Module } from '@nestjs/common';
import { KEYED_REFUNDS } from '../cancel-by-key/order-cancellation.js';
import { RefundsModule } from '../refunds/refunds.module.js';
import { RefundsService } from '../refunds/refunds.service.js';
import { IdempotencyKeysController } from './idempotency-keys.controller.js';

/**
 * Operators' routes over the idempotency package's records (the key view,
 * releasing a stuck lease, cancel by key); scope `admin`. The cancel of a
 * charged order refunds it through RefundsService.refundRestByKey, which the
 * orders canceler finds under KEYED_REFUNDS (refunds depends on orders, so
 * orders cannot import it).
 */
@Module({
  imports: [RefundsModule],
  controllers: [IdempotencyKeysController],
  providers: [{ provide: KEYED_REFUNDS, useExisting: RefundsService }],
})
export class AdminModule {}
