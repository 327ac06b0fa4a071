import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { WEBHOOK_DELIVERY_MODEL } from './schemas/webhook-delivery.schema.js';
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery } from './webhook-endpoint.js';

/** What an attempt leaves: the next state of the delivery. */
export interface AttemptResult {
  attempt: DeliveryAttempt;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  scheduleIndex: number;
}

/** webhook_deliveries: one per (event, endpoint); attempts are appended, never rewritten. */
@Injectable()
export class WebhookDeliveryRepository {
  constructor(@InjectModel(WEBHOOK_DELIVERY_MODEL) private readonly deliveries: Model<WebhookDelivery>) {}

  /**
   * In the consumer's transaction, with its inbox records; one command for the
   * batch. Each delivery is inserted only if its (event, endpoint) id is not
   * there yet, and an existing one is left as it is (attempts, status): the
   * inbox keeps a redelivered event out only while its record lives (30 days),
   * and a stream read again after that (a recreated consumer) must create
   * nothing new, nor fail the batch it came in.
   */
  async insertAbsent(session: ClientSession, deliveries: WebhookDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.deliveries.bulkWrite(
      deliveries.map(({ _id, ...fields }) => ({ updateOne: { filter: { _id }, update: { $setOnInsert: fields }, upsert: true } })),
      { session, ordered: true },
    );
  }

  /** Pending deliveries due by `now` that no live worker holds, oldest due first. */
  due(now: Date, limit: number): Promise<WebhookDelivery[]> {
    return this.deliveries
      .find({ status: 'pending', nextAttemptAt: { $lte: now }, $or: [{ lease: null }, { 'lease.until': { $lt: now } }] })
      .sort({ nextAttemptAt: 1 })
      .limit(limit)
      .lean<WebhookDelivery[]>()
      .exec();
  }

  /** Takes a due delivery for one attempt (compare-and-set): of two workers, one gets it. */
  async claim(delivery: WebhookDelivery, owner: string, now: Date, until: Date): Promise<boolean> {
    const { modifiedCount } = await this.deliveries
      .updateOne(
        // Unchanged since it was read (updatedAt moves on every write): its attempts are the ones the worker appends to.
        { _id: delivery._id, status: 'pending', updatedAt: delivery.updatedAt, $or: [{ lease: null }, { 'lease.until': { $lt: now } }] },
        { $set: { lease: { owner, until }, updatedAt: now } },
      )
      .exec();
    return modifiedCount === 1;
  }

  /**
   * Appends the attempt and moves the delivery on, if this worker still holds
   * it. The whole list is written: only the lease holder writes attempts, and
   * its claim matched the delivery as read, so `delivery.attempts` is current.
   */
  async recordAttempt(delivery: WebhookDelivery, owner: string, result: AttemptResult): Promise<boolean> {
    const { modifiedCount } = await this.deliveries
      .updateOne(
        { _id: delivery._id, 'lease.owner': owner },
        {
          $set: {
            attempts: [...delivery.attempts, result.attempt],
            status: result.status,
            nextAttemptAt: result.nextAttemptAt,
            scheduleIndex: result.scheduleIndex,
            lease: null,
            updatedAt: result.attempt.at,
          },
        },
      )
      .exec();
    return modifiedCount === 1;
  }

  listForEndpoint(tenant: string, endpointId: string): Promise<WebhookDelivery[]> {
    return this.deliveries.find({ tenant, endpointId }).sort({ createdAt: -1, _id: -1 }).limit(100).lean<WebhookDelivery[]>().exec();
  }

  findForTenant(tenant: string, id: string, session?: ClientSession): Promise<WebhookDelivery | null> {
    return this.deliveries
      .findOne({ _id: id, tenant })
      .session(session ?? null)
      .lean<WebhookDelivery>()
      .exec();
  }

  /** A manual retry: pending again, due now, the schedule from its start. */
  async retry(session: ClientSession, id: string, now: Date): Promise<void> {
    await this.deliveries
      .updateOne({ _id: id }, { $set: { status: 'pending', nextAttemptAt: now, scheduleIndex: 0, updatedAt: now } }, { session })
      .exec();
  }

  /** Pending deliveries: the consumer lag a merchant's endpoints add (the gauge). */
  countPending(): Promise<number> {
    return this.deliveries.countDocuments({ status: 'pending' }).exec();
  }
}
