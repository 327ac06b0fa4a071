import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import type { OutboxEvent } from './outbox-event.js';

/**
 * What consumers receive. `id` is the deduplication id (delivery is at least
 * once); `aggregateId` what the event is about (orders: the order id);
 * `schemaVersion` the payload's shape for this `type` (from 1).
 */
export interface PublishedEvent {
  id: string;
  type: string;
  tenant: string;
  aggregateId: string;
  schemaVersion: number;
  payload: Record<string, unknown>;
  occurredAt: string;
}

/** Where outbox events go (a broker in a real deployment). Must throw when delivery failed. */
export abstract class EventPublisher {
  abstract publish(event: PublishedEvent): Promise<void>;
}

/** Default: one log line per event and an in-process emitter that tests and local consumers subscribe to. */
@Injectable()
export class LogEventPublisher extends EventPublisher {
  private readonly logger = new Logger('Events');
  readonly emitter = new EventEmitter();

  publish(event: PublishedEvent): Promise<void> {
    this.logger.log({ msg: 'event published', eventId: event.id, type: event.type, tenant: event.tenant });
    this.emitter.emit(event.type, event);
    return Promise.resolve();
  }
}

/**
 * An event an earlier release wrote has no aggregateId or schemaVersion: it is
 * version 1, and its aggregate is the payload's `id` (order.completed's
 * payload is the order view).
 */
export function toPublishedEvent(event: OutboxEvent): PublishedEvent {
  return {
    id: event._id,
    type: event.type,
    tenant: event.tenant,
    aggregateId: event.aggregateId ?? String(event.payload.id),
    schemaVersion: event.schemaVersion ?? 1,
    payload: event.payload,
    occurredAt: event.createdAt.toISOString(),
  };
}
