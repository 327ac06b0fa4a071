import { Module } from '@nestjs/common';
import { IdempotencyKeysController } from './idempotency-keys.controller.js';

/**
 * Operators' routes over the idempotency package's records (the key view,
 * releasing a stuck lease, cancel by key); scope `admin`. The cancel's undo
 * is src/cancel-by-key's canceler, registered with the package.
 */
@Module({
  controllers: [IdempotencyKeysController],
})
export class AdminModule {}
