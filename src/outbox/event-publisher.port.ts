import { Injectable, Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import type { OutboxEvent } from './outbox-event.js';

export interface PublishedEvent {
  id: string;
  type: string;
  tenant: string;
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

export function toPublishedEvent(event: OutboxEvent): PublishedEvent {
  return { id: event._id, type: event.type, tenant: event.tenant, payload: event.payload, occurredAt: event.createdAt.toISOString() };
}
