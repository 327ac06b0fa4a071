import { Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { Clock } from '../common/clock.js';
import { TransactionRunner } from '../database/transaction.runner.js';
import { IdempotencyErasure } from '../idempotency/idempotency-erasure.js';
import { OrdersService } from '../orders/orders.service.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { subjectDigest } from '../idempotency/subject.js';
import type { Erasure } from './erasure.js';
import { ErasureRepository } from './erasure.repository.js';

/**
 * Right to erasure, in one transaction: stored idempotent responses become
 * 410 `response_erased`, orders and events carry a pseudonym instead of the
 * customer id, and the ledger keeps every amount (it names orders, not
 * people). The erasure itself is recorded without the customer id.
 */
@Injectable()
export class ErasureService {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly idempotency: IdempotencyErasure,
    private readonly orders: OrdersService,
    private readonly outbox: OutboxService,
    private readonly erasures: ErasureRepository,
    private readonly clock: Clock,
  ) {}

  async eraseCustomer(tenant: string, customerId: string): Promise<Erasure> {
    const pseudonym = `erased_${randomBytes(12).toString('hex')}`;
    const erasure = await this.transactions.run(async (session) => {
      const erasedRecords = await this.idempotency.eraseSubject(session, tenant, customerId);
      const erasure: Erasure = {
        _id: `era_${randomUUID()}`,
        tenant,
        subjectHash: subjectDigest(tenant, customerId),
        pseudonym,
        erasedAt: this.clock.now(),
        counts: {
          idempotencyRecords: erasedRecords.length,
          orders: await this.orders.eraseCustomer(session, tenant, customerId, pseudonym),
          outboxEvents: await this.outbox.eraseCustomer(session, tenant, customerId, pseudonym),
        },
        idempotencyRecordIds: erasedRecords,
      };
      await this.erasures.record(session, erasure);
      return erasure;
    });
    // After the commit; with this subject's earlier erasures, so a retry after a failed invalidation finishes it.
    await this.idempotency.forgetCached(await this.erasures.idempotencyRecordIdsFor(tenant, erasure.subjectHash));
    return erasure;
  }
}
