import type { CloudEvent } from './cloud-event.js';

/** One event as a subscriber receives it. Delivery is at least once: deduplicate on `event.id`. */
export interface DeliveredEvent {
  event: CloudEvent;
  /** How many times the transport delivered this event before (0 the first time). */
  redeliveries: number;
}

export interface SubscribeOptions {
  /** At most this many events per call of the handler (a batch is recorded in one transaction by consumers that can). */
  maxBatch?: number;
  /** How often the consumer's backlog is read from the transport for `events_consumer_pending` (JetStream; 15 s by default). */
  pendingRefreshMs?: number;
}

/** A running subscription; `stop()` drains the batch in hand and ends it. */
export interface Subscription {
  stop(): Promise<void>;
}

/**
 * The consumer side of the event stream, behind which sit JetStream (a
 * durable pull consumer, explicit ack) or the in-process bus. A batch is
 * acknowledged when the handler resolves and delivered again when it throws,
 * so a handler must be idempotent per event id (the package's idempotent
 * message handler makes it so).
 */
export abstract class EventSubscriber {
  /** `consumer` is the durable name: two instances subscribing under one name share the work. */
  abstract subscribe(
    consumer: string,
    handle: (batch: DeliveredEvent[]) => Promise<void>,
    options?: SubscribeOptions,
  ): Promise<Subscription>;
}
