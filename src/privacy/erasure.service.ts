import { Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { Clock } from '../common/clock.js';
import {
  CacheInvalidationFailedError,
  type ErasedRecord,
  IdempotencyErasure,
  SubjectDigests,
  TransactionRunner,
} from '@idempotent-orders/nest-idempotency';
import { OrdersService } from '../orders/orders.service.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { WebhookEndpointsService } from '../webhook-endpoints/webhook-endpoints.service.js';
import type { Erasure } from './erasure.js';
import { ErasureRepository, type DueInvalidation } from './erasure.repository.js';

/**
 * Right to erasure, in one transaction: stored idempotent responses become
 * 410 `response_erased`, orders and events carry a pseudonym instead of the
 * customer id (so do recorded webhook deliveries), and the ledger keeps every amount (it names orders, not
 * people). The erasure itself is recorded without the customer id.
 *
 * With the Redis fast path, the subject's cached answers are marked before
 * the transaction (fail closed: nothing commits if Redis cannot be told) and
 * deleted after it; the erasure document says whether that last step is
 * still due, so a crash or a Redis failure after the commit is retried by
 * ErasureCacheSweep instead of leaving an erased answer replayable.
 */
@Injectable()
export class ErasureService {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly idempotency: IdempotencyErasure,
    private readonly digests: SubjectDigests,
    private readonly orders: OrdersService,
    private readonly outbox: OutboxService,
    private readonly webhooks: WebhookEndpointsService,
    private readonly erasures: ErasureRepository,
    private readonly clock: Clock,
  ) {}

  async eraseCustomer(tenant: string, customerId: string): Promise<Erasure> {
    const pseudonym = `erased_${randomBytes(12).toString('hex')}`;
    await this.idempotency.guardCached(tenant, customerId);
    const erasure = await this.transactions.run(async (session) => {
      const erasedRecords = await this.idempotency.eraseSubject(session, tenant, customerId);
      const erasedAt = this.clock.now();
      const erasure: Erasure = {
        _id: `era_${randomUUID()}`,
        tenant,
        subjectHash: this.digests.of(tenant, customerId),
        erasedAt,
        counts: {
          idempotencyRecords: erasedRecords.length,
          orders: await this.orders.eraseCustomer(session, tenant, customerId, pseudonym),
          outboxEvents: await this.outbox.eraseCustomer(session, tenant, customerId, pseudonym),
        },
        idempotencyRecordIds: erasedRecords.map((record) => record.recordId),
        cacheGuardUntil: new Date(Math.max(erasedAt.getTime(), ...erasedRecords.map((record) => record.expiresAt.getTime()))),
        cacheInvalidatedAt: this.idempotency.cacheEnabled && erasedRecords.length > 0 ? null : erasedAt,
      };
      // Recorded webhook deliveries hold the event's body as sent; a retry must not send the real id again.
      await this.webhooks.eraseCustomer(session, tenant, customerId, pseudonym);
      await this.erasures.record(session, erasure);
      return erasure;
    });
    // Committed: a failure from here on leaves the invalidation due (the sweep retries it); the caller gets 503.
    if (erasure.cacheInvalidatedAt === null && !(await this.invalidate(erasure))) throw new CacheInvalidationFailedError();
    return erasure;
  }

  /** Tells Redis about one erasure's records and notes it done; false when Redis could not be told. */
  async invalidate(erasure: DueInvalidation): Promise<boolean> {
    const until = erasure.cacheGuardUntil ?? this.clock.now();
    const records: ErasedRecord[] = (erasure.idempotencyRecordIds ?? []).map((recordId) => ({ recordId, expiresAt: until }));
    if (!(await this.idempotency.forgetCached(records))) return false;
    await this.erasures.markCacheInvalidated(erasure._id, this.clock.now());
    return true;
  }
}
