import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { ClientSession, Model } from 'mongoose';
import { afterPosition, pageOf, type PagePosition } from '../common/page-cursor.js';
import { WEBHOOK_DELIVERY_MODEL } from './schemas/webhook-delivery.schema.js';
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery } from './webhook-endpoint.js';

/** What an attempt leaves: the next state of the delivery. */
export interface AttemptResult {
  attempt: DeliveryAttempt;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  scheduleIndex: number;
  /** Set when the delivery ends (the retention starts); null while it is pending. */
  expiresAt: Date | null;
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

  /**
   * Pending deliveries due by `now` that no live worker holds, oldest due first, leaving out the endpoints in
   * `skip` (those this worker already sends its share to: their backlog must not fill the window of the others).
   */
  due(now: Date, limit: number, skip: string[] = []): Promise<WebhookDelivery[]> {
    return this.deliveries
      .find({
        status: 'pending',
        nextAttemptAt: { $lte: now },
        $or: [{ lease: null }, { 'lease.until': { $lt: now } }],
        ...(skip.length > 0 ? { endpointId: { $nin: skip } } : {}),
      })
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
        // The attempt it starts is the one a manual retry asked for: the request is taken with it.
        { $set: { lease: { owner, until }, retryRequested: false, updatedAt: now } },
      )
      .exec();
    return modifiedCount === 1;
  }

  /**
   * Appends the attempt and moves the delivery on, if this worker still holds
   * it. The whole list is written: only the lease holder writes attempts, and
   * its claim matched the delivery as read, so `delivery.attempts` is current.
   *
   * A manual retry asked for while the attempt was in flight wins over the
   * attempt's own next step: the delivery stays pending, due now, its schedule
   * from the start, as the retry's 202 promised. (Written over, the retry was
   * lost: the schedule's last attempt ended the delivery failed.) Two
   * conditional writes, never both applied: the first only without a request.
   */
  async recordAttempt(delivery: WebhookDelivery, owner: string, result: AttemptResult): Promise<'recorded' | 'retry_requested' | 'lost'> {
    const held = { _id: delivery._id, 'lease.owner': owner };
    const common = { attempts: [...delivery.attempts, result.attempt], lease: null, updatedAt: result.attempt.at };
    const { modifiedCount } = await this.deliveries
      .updateOne(
        { ...held, retryRequested: { $ne: true } },
        {
          $set: {
            ...common,
            status: result.status,
            nextAttemptAt: result.nextAttemptAt,
            scheduleIndex: result.scheduleIndex,
            expiresAt: result.expiresAt,
          },
        },
      )
      .exec();
    if (modifiedCount === 1) return 'recorded';
    const retried = await this.deliveries
      .updateOne(
        { ...held, retryRequested: true },
        {
          $set: {
            ...common,
            status: 'pending',
            nextAttemptAt: result.attempt.at,
            scheduleIndex: 0,
            expiresAt: null,
            retryRequested: false,
          },
        },
      )
      .exec();
    return retried.modifiedCount === 1 ? 'retry_requested' : 'lost';
  }

  /** One page of an endpoint's deliveries, newest first, after `after` (from the start without it). */
  async listForEndpoint(
    tenant: string,
    endpointId: string,
    limit: number,
    after: PagePosition | null,
  ): Promise<{ items: WebhookDelivery[]; next: PagePosition | null }> {
    const found = await this.deliveries
      .find({ tenant, endpointId, ...afterPosition(after) })
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit + 1)
      .lean<WebhookDelivery[]>()
      .exec();
    return pageOf(found, limit);
  }

  findForTenant(tenant: string, id: string, session?: ClientSession): Promise<WebhookDelivery | null> {
    return this.deliveries
      .findOne({ _id: id, tenant })
      .session(session ?? null)
      .lean<WebhookDelivery>()
      .exec();
  }

  /**
   * A manual retry: pending again, due now, the schedule from its start. It is
   * also noted as asked for (`retryRequested`), for an attempt in flight whose
   * result would otherwise write over it; the next claim takes the request.
   */
  async retry(session: ClientSession, id: string, now: Date): Promise<void> {
    await this.deliveries
      .updateOne(
        { _id: id },
        { $set: { status: 'pending', nextAttemptAt: now, scheduleIndex: 0, expiresAt: null, retryRequested: true, updatedAt: now } },
        { session },
      )
      .exec();
  }

  // --- Erasure (right to be forgotten); added apart from the insert path above. ---

  /**
   * In the erasure's transaction: every delivery of this tenant whose body
   * names the customer gets the pseudonym instead, so a later attempt
   * (scheduled or manual) never sends the real id again. They are found by
   * their `subject` (the customer's keyed digest, index tenant_subject), and
   * those recorded before that field existed by a substring of their body
   * (the same index's null keys: only those old rows are read, and they go
   * with their retention). The body is stored as the exact string each
   * attempt sends (and signs at send time), so it is parsed, changed and
   * written back whole; `subject` becomes '' so the row no longer links the
   * digest to the pseudonym. `updatedAt` moves, so a worker holding an older
   * read fails its claim and reads the new body.
   */
  async pseudonymizeCustomer(
    session: ClientSession,
    tenant: string,
    subject: string,
    customerId: string,
    pseudonym: string,
    now: Date,
  ): Promise<number> {
    const fragment = `"customerId":${JSON.stringify(customerId)}`;
    const named = await this.deliveries
      .find(
        {
          $or: [
            { tenant, subject },
            { tenant, subject: null, payload: { $regex: escapeRegExp(fragment) } },
          ],
        },
        { _id: 1, payload: 1 },
      )
      .session(session)
      .lean<Pick<WebhookDelivery, '_id' | 'payload'>[]>()
      .exec();
    const writes = named.flatMap((delivery) => {
      const event = JSON.parse(delivery.payload) as { data?: { customerId?: unknown } };
      if (event.data?.customerId !== customerId) return [];
      event.data.customerId = pseudonym;
      const payload = JSON.stringify(event);
      return [{ updateOne: { filter: { _id: delivery._id }, update: { $set: { payload, subject: '', updatedAt: now } } } }];
    });
    if (writes.length === 0) return 0;
    const result = await this.deliveries.bulkWrite(writes, { session, ordered: true });
    return result.modifiedCount;
  }

  /** Pending deliveries: the consumer lag a merchant's endpoints add (the gauge). */
  countPending(): Promise<number> {
    return this.deliveries.countDocuments({ status: 'pending' }).exec();
  }
}

/** A literal string as a regular expression (the customer id is the caller's text). */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
