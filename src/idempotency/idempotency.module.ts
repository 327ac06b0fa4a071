import { Module } from '@nestjs/common';
import { MongooseModule } from '@nestjs/mongoose';
import { IdempotencyAdminService } from './idempotency-admin.service.js';
import { IdempotencyClaims } from './idempotency-claims.js';
import { IdempotencyAttempts } from './idempotency-attempts.js';
import { IdempotencyErasure } from './idempotency-erasure.js';
import { IdempotencyKeysController } from './idempotency-keys.controller.js';
import { IdempotencyReaper } from './idempotency-reaper.js';
import { IdempotencyRecordRepository } from './idempotency-record.repository.js';
import { IdempotencyService } from './idempotency.service.js';
import { InFlightWaiters } from './in-flight-waiters.js';
import { IdempotencyFastPath } from './fast-path/idempotency-fast-path.js';
import { RedisCache } from './fast-path/redis-cache.js';
import { StoredResponses } from './stored-responses.js';
import { IdempotencyRecordSchema, IDEMPOTENCY_RECORD_MODEL } from './schemas/idempotency-record.schema.js';
import { IdempotencyTombstoneSchema, IDEMPOTENCY_TOMBSTONE_MODEL } from './schemas/idempotency-tombstone.schema.js';
import { SubjectLockSchema, SUBJECT_LOCK_MODEL } from './schemas/subject-lock.schema.js';
import { SubjectLockRepository } from './subject-lock.repository.js';
import { SubjectDigests } from './subject.js';
import { ServiceBinding } from './service-binding.js';
import { LateRetries } from './late-retries.js';
import { TombstoneRepository } from './tombstone.repository.js';

/**
 * The reusable part: knows nothing of orders. A consumer declares
 * @Idempotent() on a route, hands IdempotencyService.execute its work, and
 * records progress with IdempotencyAttempts inside its own transactions.
 */
@Module({
  imports: [
    MongooseModule.forFeature([
      { name: IDEMPOTENCY_RECORD_MODEL, schema: IdempotencyRecordSchema },
      { name: SUBJECT_LOCK_MODEL, schema: SubjectLockSchema },
      { name: IDEMPOTENCY_TOMBSTONE_MODEL, schema: IdempotencyTombstoneSchema },
    ]),
  ],
  controllers: [IdempotencyKeysController],
  providers: [
    IdempotencyRecordRepository,
    SubjectLockRepository,
    SubjectDigests,
    ServiceBinding,
    TombstoneRepository,
    LateRetries,
    StoredResponses,
    IdempotencyClaims,
    IdempotencyService,
    IdempotencyAttempts,
    IdempotencyErasure,
    IdempotencyReaper,
    IdempotencyAdminService,
    InFlightWaiters,
    RedisCache,
    IdempotencyFastPath,
  ],
  exports: [IdempotencyService, IdempotencyAttempts, IdempotencyErasure, IdempotencyReaper, SubjectDigests],
})
export class IdempotencyModule {}
