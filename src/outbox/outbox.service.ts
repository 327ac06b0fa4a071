import { Injectable } from '@nestjs/common';
import type { ClientSession } from 'mongoose';
import { OutboxEventRepository } from './outbox-event.repository.js';

export interface NewEvent {
  /** Deterministic per business fact (orders: `evt_<order id>_completed`), so it is written once. */
  id: string;
  tenant: string;
  type: string;
  payload: Record<string, unknown>;
}

@Injectable()
export class OutboxService {
  constructor(private readonly events: OutboxEventRepository) {}

  /** Erasure: events not yet published (and the history of published ones) stop naming the customer. */
  eraseCustomer(session: ClientSession, tenant: string, customerId: string, pseudonym: string): Promise<number> {
    return this.events.pseudonymizeCustomer(session, tenant, customerId, pseudonym);
  }

  /** Inside the caller's transaction: the event exists if and only if the change committed. */
  async enqueue(session: ClientSession, event: NewEvent, now: Date): Promise<void> {
    await this.events.insert(session, {
      _id: event.id,
      tenant: event.tenant,
      type: event.type,
      payload: event.payload,
      status: 'pending',
      attempts: 0,
      availableAt: now,
      createdAt: now,
      publishedAt: null,
      lastError: null,
    });
  }
}
