import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { IdempotencyAdminService } from './idempotency-admin.service.js';
import { IdempotencyAttempts } from './idempotency-attempts.js';
import { IdempotencyErasure } from './idempotency-erasure.js';
import { IdempotencyKeysController } from './idempotency-keys.controller.js';
import { IdempotencyReaper } from './idempotency-reaper.js';
import { IdempotencyRecordRepository } from './idempotency-record.repository.js';
import { IdempotencyService } from './idempotency.service.js';
import { StoredResponses } from './stored-responses.js';
import { IdempotencyRecordSchema, IDEMPOTENCY_RECORD_MODEL } from './schemas/idempotency-record.schema.js';

/**
 * The reusable part: knows nothing of orders. A consumer declares
 * @Idempotent() on a route, hands IdempotencyService.execute its work, and
 * records progress with IdempotencyAttempts inside its own transactions.
 */
@Module({
  imports: [MongooseModule.forFeature([{ name: IDEMPOTENCY_RECORD_MODEL, schema: IdempotencyRecordSchema }])],
  controllers: [IdempotencyKeysController],
  providers: [
    IdempotencyRecordRepository,
    StoredResponses,
    IdempotencyService,
    IdempotencyAttempts,
    IdempotencyErasure,
    IdempotencyReaper,
    IdempotencyAdminService,
  ],
  exports: [IdempotencyService, IdempotencyAttempts, IdempotencyErasure, IdempotencyReaper],
})
export class IdempotencyModule {}
