import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { contentDiff } from '../common/content-diff.js';
import { DuplicateClaimError } from '@idempotent-orders/nest-idempotency';
import { OutboxEventRepository } from './outbox-event.repository.js';

/**
 * What an event says; delivery fields (status, attempts, availableAt) change as the relay works.
 * aggregateId and schemaVersion are not compared: an event an earlier release wrote has neither,
 * and its id already names the fact.
 */
const EVENT_CONTENT = ['tenant', 'type', 'payload'] as const;

export interface NewEvent {
  /** Deterministic per business fact (orders: `evt_<order id>_completed`), so it is written once. */
  id: string;
  tenant: string;
  type: string;
  /** What the event is about (orders: the order id). */
  aggregateId: string;
  /** The payload's shape for this type; bump it when the shape changes (consumers branch on it). */
  schemaVersion: number;
  payload: Record<string, unknown>;
}

@Injectable()
export class OutboxService {
  constructor(private readonly events: OutboxEventRepository) {}

  /** Erasure: events not yet published (and the history of published ones) stop naming the customer. */
  eraseCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string): Promise<number> {
    return this.events.pseudonymizeCustomer(session, tenant, customerId, pseudonym);
  }

  /**
   * Inside the caller's transaction: the event exists if and only if the
   * change committed. An event already there with exactly this content (a
   * half-applied earlier attempt; published or not) is adopted; one with
   * other content under this id is a conflict for a human.
   */
  async enqueue(session: ClientSession, event: NewEvent, now: Date): Promise<'enqueued' | 'adopted'> {
    // Numbered before the write so that the usual case, a new event, costs two commands and no read; all of it
    // commits or none, so the number given back below leaves the counter without a gap.
    const sequence = await this.events.nextSequence(session, event.aggregateId);
    const inserted = await this.events.insertIfAbsent(session, {
      _id: event.id,
      tenant: event.tenant,
      type: event.type,
      aggregateId: event.aggregateId,
      schemaVersion: event.schemaVersion,
      sequence,
      payload: event.payload,
      status: 'pending',
      attempts: 0,
      availableAt: now,
      createdAt: now,
      publishedAt: null,
      lastError: null,
    });
    if (inserted) return 'enqueued';
    // An adopted event keeps the number it was given when it was new.
    await this.events.releaseSequence(session, event.aggregateId);
    const existing = await this.events.findById(session, event.id);
    const differs = contentDiff<Pick<NewEvent, (typeof EVENT_CONTENT)[number]>>(existing!, event, EVENT_CONTENT);
    if (differs.length > 0) throw new DuplicateClaimError('outbox event', `event ${event.id} differs in ${differs.join(', ')}`);
    return 'adopted';
  }
}
