import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { toCloudEvent } from './cloud-event.js';
import type { DeliveredEvent, EventSubscriber, Subscription } from './event-subscriber.port.js';
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
  /** The event's position among its aggregate's events in commit order, from 1. Absent on events an earlier release wrote. */
  sequence?: number;
  payload: Record<string, unknown>;
  occurredAt: string;
}

/** Where outbox events go (a broker in a real deployment). Must throw when delivery failed. */
export abstract class EventPublisher {
  abstract publish(event: PublishedEvent): Promise<void>;
}

/**
 * Default without a broker: one log line per event, an in-process emitter
 * that tests and local consumers listen on, and the in-process side of
 * EventSubscriber. A publish resolves once every subscriber's handler has
 * resolved and throws when one throws, so the relay retries the event later
 * (every subscriber gets it again and deduplicates on its id): at least once,
 * as on the broker, but only while this process lives. A consumer is durable
 * here too: once one has stopped (the service shutting down), publishes fail
 * and events wait in the outbox for the next process, rather than going out
 * to the consumers that are left and never to the stopped one.
 */
@Injectable()
export class LogEventPublisher extends EventPublisher implements EventSubscriber {
  private readonly logger = new Logger('Events');
  readonly emitter = new EventEmitter();
  private readonly subscribers = new Map<string, (batch: DeliveredEvent[]) => Promise<void>>();
  /** Times each event went to the subscribers before: the in-process `redeliveries`. */
  private readonly deliveries = new Map<string, number>();
  /** Consumers that subscribed and then stopped: their events must wait, as on a durable consumer. */
  private readonly stopped = new Set<string>();

  async publish(event: PublishedEvent): Promise<void> {
    if (this.stopped.size > 0) {
      throw new Error(`in-process consumer ${[...this.stopped].join(', ')} stopped: the event waits in the outbox for the next start`);
    }
    this.logger.log({ msg: 'event published', eventId: event.id, type: event.type, tenant: event.tenant });
    this.emitter.emit(event.type, event);
    if (this.subscribers.size === 0) return;
    const redeliveries = this.deliveries.get(event.id) ?? 0;
    this.deliveries.set(event.id, redeliveries + 1);
    const batch = [{ event: toCloudEvent(event), redeliveries }];
    const results = await Promise.allSettled([...this.subscribers.values()].map((handle) => handle(batch)));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    this.deliveries.delete(event.id);
  }

  subscribe(consumer: string, handle: (batch: DeliveredEvent[]) => Promise<void>): Promise<Subscription> {
    if (this.subscribers.has(consumer)) throw new Error(`in-process consumer ${consumer} is already subscribed`);
    this.subscribers.set(consumer, handle);
    this.stopped.delete(consumer);
    return Promise.resolve({
      stop: () => {
        this.subscribers.delete(consumer);
        this.stopped.add(consumer);
        return Promise.resolve();
      },
    });
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
    ...(event.sequence === undefined ? {} : { sequence: event.sequence }),
    payload: event.payload,
    occurredAt: event.createdAt.toISOString(),
  };
}
